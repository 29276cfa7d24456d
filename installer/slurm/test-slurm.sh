#!/usr/bin/env bash
# installer/slurm/test-slurm.sh: installer/slurm/dtlab.sbatch on a real Slurm cluster of two
# nodes on this one machine (root only; Debian 12). It installs slurm-wlm and munge when
# missing (apt-get), then
#   1. starts munged with its own key and socket,
#   2. makes two network namespaces on a bridge (10.77.0.11 and .12; 10.77.0.1 here),
#   3. starts slurmctld here and two slurmd nodes, dtnode1 and dtnode2, each in its namespace
#      and in its own UTS namespace (its host name is its node name) and mount namespace (an
#      /etc/hosts naming the nodes bound over the real one); no cgroups, no accounting,
#   4. submits `sbatch --nodes=2 --wait installer/slurm/dtlab.sbatch SPEC` and checks that it
#      trained across both nodes: the job's status, dtlab-cli's {"runs":[...]} line (completed,
#      a rank on each node, equal parameter checksums), the project in the submit folder
#      (dtlab-cli project list), both daemons' logs, the token removed, no daemon left,
#   5. submits an --exclusive job with mutual TLS (DTLAB_TLS_DIR, certificates from dtlab-node
#      gen-certs), the daemons advertising their node names, found on PATH, and given the
#      node's CPUs as threads: it completes,
#   6. submits a longer job and signals its batch shell as `--signal=B:TERM@T` does before a
#      time limit: the run is recorded as cancelled and the daemons go,
#   7. submits a longer job and cancels it with plain scancel: the same,
#   8. submits a job whose daemons cannot start: it fails naming the nodes, showing their logs,
# and in any case stops every daemon it started and deletes the namespaces and the bridge.
#
#   installer/slurm/test-slurm.sh [--bin DIR] [--spec SPEC.json]
#
# --bin DIR (or DTLAB_BIN=DIR): the folder holding dtlab-node and dtlab-cli (default: those on
# PATH, i.e. the installed packages). --spec: the spec of step 4 (default
# resources/specs/default.json). Everything it writes (slurm.conf, munge key, state, logs, the
# submit folder with the job outputs and the project) goes to DTLAB_SLURM_TEST_DIR (default
# /tmp/dtlab-slurm-test), emptied at the start and kept afterwards for a look; nothing to /etc.
# DTLAB_SLURM_SUBNET (default 10.77.0) must be a /24 this machine does not use.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
sbatch_script="$repo/installer/slurm/dtlab.sbatch"
dir="${DTLAB_SLURM_TEST_DIR:-/tmp/dtlab-slurm-test}"
subnet="${DTLAB_SLURM_SUBNET:-10.77.0}"
bin="${DTLAB_BIN:-}"
spec="$repo/resources/specs/default.json"
nodes=(dtnode1 dtnode2)
bridge=dtlab-br0
started=$SECONDS

say() { printf '[test-slurm %3ds] %s\n' "$((SECONDS - started))" "$*" >&2; }
fail() {
  say "FAILED: $*"
  exit 1
}
usage() {
  echo "usage: installer/slurm/test-slurm.sh [--bin DIR] [--spec SPEC.json]" >&2
  exit 2
}

while [ $# -gt 0 ]; do
  case "$1" in
    --bin) [ $# -ge 2 ] || usage; bin=$2; shift 2 ;;
    --spec) [ $# -ge 2 ] || usage; spec=$2; shift 2 ;;
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) usage ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "test-slurm.sh: run as root (namespaces, slurmd)" >&2; exit 2; }
spec=$(realpath "$spec")
[ -r "$spec" ] || fail "cannot read the spec $spec"
if [ -n "$bin" ]; then
  bin=$(realpath "$bin")
  if [ ! -x "$bin/dtlab-node" ] || [ ! -x "$bin/dtlab-cli" ]; then fail "no dtlab-node and dtlab-cli in $bin"; fi
  export DTLAB_BIN="$bin"
  cli="$bin/dtlab-cli"
else
  unset DTLAB_BIN
  cli=$(command -v dtlab-cli) || fail "dtlab-cli is not on PATH (install the packages or give --bin)"
  command -v dtlab-node >/dev/null || fail "dtlab-node is not on PATH (install the packages or give --bin)"
fi
if ip -o addr show | grep -q " inet $subnet\."; then
  fail "$subnet.0/24 is in use here: choose another DTLAB_SLURM_SUBNET"
fi

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null \
  || ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
  say "installing slurm-wlm and munge"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y slurm-wlm munge >/dev/null 2>&1 \
    || { apt-get update >/dev/null 2>&1 && apt-get install -y slurm-wlm munge >/dev/null; } \
    || fail "apt-get install slurm-wlm munge"
fi
say "$(slurmd -V), $(munged --version 2>&1 | head -1)"

# A leftover of an interrupted run (or a run still going) would make this one fail in
# confusing ways; and the folder is emptied only when an earlier run made it.
for ns in "${nodes[@]}"; do
  if ip netns list | grep -qw "^dtlab-$ns"; then fail "namespace dtlab-$ns exists (a run still going?)"; fi
done
for link in "$bridge" dtlab-v1 dtlab-v2; do
  if ip link show "$link" >/dev/null 2>&1; then fail "the link $link exists (a run still going?)"; fi
done
if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ] \
  && ! grep -qs '^# written by installer/slurm/test-slurm.sh' "$dir/slurm.conf"; then
  fail "$dir is not empty and not an earlier run's: choose another DTLAB_SLURM_TEST_DIR"
fi

# ---- teardown: the test cluster's jobs cancelled (their scripts stop their daemons), every
# process started here stopped by its id, whatever is still in the namespaces killed (slurmstepd,
# job steps, dtlab-node), then the veths, the namespaces and the bridge.
pids=()
slurmctld_pid=""
cleanup() {
  local status=$? pid ns left
  trap - EXIT INT TERM
  if [ -n "$slurmctld_pid" ] && kill -0 "$slurmctld_pid" 2>/dev/null; then
    timeout 10 scancel --quiet --user=root >/dev/null 2>&1 || true
    for _ in $(seq 30); do
      [ -n "$(timeout 10 squeue --noheader --format=%i 2>/dev/null || echo running)" ] || break
      sleep 1
    done
  fi
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill -TERM "${pids[i]}" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  for ns in "${nodes[@]}"; do
    ip netns list | grep -qw "^dtlab-$ns" || continue
    left=$(ip netns pids "dtlab-$ns" 2>/dev/null | tr '\n' ' ')
    if [ -n "$left" ]; then
      say "killing what is left in namespace dtlab-$ns: $left"
      # shellcheck disable=SC2086 # (a list of process ids)
      kill -KILL $left 2>/dev/null || true
      sleep 0.5
    fi
    ip netns delete "dtlab-$ns" 2>/dev/null || true
  done
  # A namespace lives on while anything holds it (an orphaned TCP socket retrying): its veth
  # would stay in sight.
  for i in "${!nodes[@]}"; do ip link delete "dtlab-v$((i + 1))" 2>/dev/null || true; done
  ip link delete "$bridge" 2>/dev/null || true
  if [ "$status" -eq 0 ]; then say "passed"; else say "failed (status $status); files in $dir"; fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM


rm -rf "$dir"
mkdir -p "$dir"/{munge,state,log,run,submit} "${nodes[@]/#/$dir/spool/}"
chmod 755 "$dir" "$dir/munge"
export SLURM_CONF="$dir/slurm.conf"

say "1. munged (key and socket in $dir/munge)"
mungekey --create --keyfile="$dir/munge/munge.key"
munged --foreground --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.sock" \
  --log-file="$dir/log/munged.log" --pid-file="$dir/run/munged.pid" \
  --seed-file="$dir/munge/munged.seed" >"$dir/log/munged.out" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -S "$dir/munge/munge.sock" ] && break; sleep 0.1; done
munge --socket="$dir/munge/munge.sock" --no-input | unmunge --socket="$dir/munge/munge.sock" >/dev/null \
  || fail "munged does not answer (see $dir/log/munged.out)"

say "2. network: bridge $bridge ($subnet.1), namespaces dtlab-${nodes[0]} and dtlab-${nodes[1]}"
ip link add "$bridge" type bridge
ip addr add "$subnet.1/24" dev "$bridge"
ip link set "$bridge" up
{
  echo "127.0.0.1 localhost"
  echo "$subnet.1 $(hostname -s)"
} >"$dir/hosts"
for i in "${!nodes[@]}"; do
  node=${nodes[i]}
  ns=dtlab-$node
  address=$subnet.$((11 + i))
  ip netns add "$ns"
  ip link add "dtlab-v$((i + 1))" type veth peer name eth0 netns "$ns"
  ip link set "dtlab-v$((i + 1))" master "$bridge" up
  ip -n "$ns" addr add "$address/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
  echo "$address $node" >>"$dir/hosts"
done

ctl_host=$(hostname -s)
cat >"$SLURM_CONF" <<EOF
# written by installer/slurm/test-slurm.sh: two nodes in network namespaces, no cgroups
ClusterName=dtlabtest
SlurmctldHost=$ctl_host($subnet.1)
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$dir/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
SlurmdTimeout=60
InactiveLimit=0
KillWait=10
MinJobAge=600
NodeName=${nodes[0]} NodeAddr=$subnet.11 NodeHostname=${nodes[0]} CPUs=2 State=UNKNOWN
NodeName=${nodes[1]} NodeAddr=$subnet.12 NodeHostname=${nodes[1]} CPUs=2 State=UNKNOWN
PartitionName=dtlab Nodes=${nodes[0]},${nodes[1]} Default=YES MaxTime=INFINITE State=UP
EOF
: >"$dir/plugstack.conf"

say "3. slurmctld (port 16817 on $subnet.1), slurmd ${nodes[*]} in their namespaces"
slurmctld -D -i -f "$SLURM_CONF" >"$dir/log/slurmctld.out" 2>&1 &
slurmctld_pid=$!
pids+=("$slurmctld_pid")
for node in "${nodes[@]}"; do
  # nsenter, not ip netns exec, which would mount a /sys without the cgroup file systems that
  # slurmd's start checks for. nsenter and unshare exec, so $! is slurmd itself.
  # shellcheck disable=SC2016 # (the arguments of bash -c)
  nsenter --net="/run/netns/dtlab-$node" unshare --uts --mount --propagation private \
    bash -c 'hostname "$1" && mount --bind "$2" /etc/hosts && exec slurmd -D -N "$1" -f "$3"' \
    slurmd-wrapper "$node" "$dir/hosts" "$SLURM_CONF" >"$dir/log/slurmd-$node.out" 2>&1 &
  pids+=($!)
done
ready=""
for _ in $(seq 60); do
  states=$(sinfo --noheader --Node --format='%N %t' 2>/dev/null || true)
  if [ "$(grep -c ' idle$' <<<"$states")" -eq "${#nodes[@]}" ]; then ready=1; break; fi
  sleep 1
done
if [ -z "$ready" ]; then
  tail -n 20 "$dir/log/slurmctld.log" "$dir"/log/slurmd-*.log >&2 || true
  fail "the nodes are not idle after 60 s: $(tr '\n' ',' <<<"$states")"
fi
say "   sinfo: $(tr '\n' ' ' <<<"$states")"

# Waits for job $1 to leave the queue (sbatch --wait gives only its own exit status).
job_state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
no_daemons_left() {
  local node left
  for node in "${nodes[@]}"; do
    for _ in $(seq 30); do
      left=$(ip netns pids "dtlab-$node" | paste -sd, - | xargs -r ps -o comm= -p \
        | grep -c '^dtlab-node' || true)
      [ "$left" -eq 0 ] && break
      sleep 1
    done
    [ "$left" -eq 0 ] || fail "$1: $left dtlab-node process(es) left on $node"
  done
}

say "4. sbatch --nodes=2 --wait dtlab.sbatch $spec"
cd "$dir/submit"
run_start=$SECONDS
status=0
timeout 600 sbatch --nodes=2 --wait --parsable --output="$dir/submit/dtlab-%j.out" \
  "$sbatch_script" "$spec" run >"$dir/submit/sbatch.out" 2>&1 || status=$?
job=$(grep -Eo '^[0-9]+' "$dir/submit/sbatch.out" | head -1 || true)
out="$dir/submit/dtlab-$job.out"
if [ -z "$job" ] || [ ! -e "$out" ]; then fail "no job output (sbatch: $(cat "$dir/submit/sbatch.out"))"; fi
if [ "$status" -ne 0 ]; then
  tail -n 40 "$out" >&2
  tail -n 20 "$dir/submit/dtlab-$job"/node-*.log >&2 || true
  fail "job $job ended with status $status (output $out)"
fi
say "   job $job completed in $((SECONDS - run_start)) s; its output ends:"
grep '^\[dtlab.sbatch\]' "$out" | sed 's/^/     /' >&2
runs=$(grep '^{"runs":' "$out" | tail -1)
[ -n "$runs" ] || fail "no {\"runs\":[...]} line in $out"
grep -q '"status":"completed"' <<<"$runs" || fail "the run did not complete: $runs"
grep -q '"nodes":2' <<<"$runs" || fail "the run did not have 2 nodes: $runs"
for node in "${nodes[@]}"; do
  grep -q "($node:7000): host $node," <<<"$runs" || fail "no rank on $node:7000 in $runs"
  grep -q '^dtlab-node listening on 0.0.0.0:7000' "$dir/submit/dtlab-$job/node-$node.log" \
    || fail "the daemon on $node never said it was listening"
done
checksums=$(grep -o '"param_checksum":\[[^]]*\]' <<<"$runs")
[ "$(grep -o '"[0-9a-f]\{16\}"' <<<"$checksums" | sort -u | wc -l)" -eq 1 ] \
  || fail "the replicas' parameters differ: $checksums"
say "   $(grep -o '"detail":"node[0-9] ([^"]*' <<<"$runs" | sed 's/"detail":"//' | tr '\n' ';')"
say "   $(grep -o '"final_test_accuracy":[0-9.]*' <<<"$runs" | head -1), $checksums"
project="$dir/submit/run.dtlab"
[ -s "$project" ] || fail "no project $project"
"$cli" project list "$project" --json >"$dir/submit/project-list.json" \
  || fail "dtlab-cli project list $project"
grep -q '"status":"completed"' "$dir/submit/project-list.json" \
  || fail "the project has no completed run: $(cat "$dir/submit/project-list.json")"
say "   dtlab-cli project list: $("$cli" project list "$project" | tail -n 1 | tr -s ' ')"
[ ! -e "$dir/submit/dtlab-$job/token" ] || fail "the job's token file was left behind"
no_daemons_left "job $job"
for node in "${nodes[@]}"; do
  grep -q '^dtlab-node exited with status 0' "$dir/submit/dtlab-$job/node-$node.log" \
    || fail "the daemon on $node did not stop cleanly: $(tail -n 3 "$dir/submit/dtlab-$job/node-$node.log")"
done

say "5. --exclusive, mutual TLS (DTLAB_TLS_DIR), node names advertised, binaries on PATH"
"${bin:+$bin/}dtlab-node" gen-certs "$dir/certs" --hosts "$(IFS=,; echo "${nodes[*]}")" >/dev/null
status=0
PATH="${bin:+$bin:}$PATH" DTLAB_BIN="" DTLAB_TLS_DIR="$dir/certs" DTLAB_ADVERTISE=nodename \
  DTLAB_CLI_ARGS=--quiet timeout 300 sbatch --nodes=2 --exclusive --wait --parsable \
  --output="$dir/submit/dtlab-%j.out" "$sbatch_script" "$spec" tls \
  >"$dir/submit/sbatch-tls.out" 2>&1 || status=$?
job=$(grep -Eo '^[0-9]+' "$dir/submit/sbatch-tls.out" | head -1 || true)
out="$dir/submit/dtlab-$job.out"
[ "$status" -eq 0 ] || { tail -n 30 "$out" >&2; fail "the TLS job $job ended with status $status"; }
runs=$(grep '^{"runs":' "$out" | tail -1)
grep -q '"status":"completed"' <<<"$runs" || fail "the TLS run did not complete ($out)"
for node in "${nodes[@]}"; do
  grep -q "($node:7000): host $node, .*, 2 worker threads" <<<"$runs" \
    || fail "no rank with the node's 2 CPUs as threads on $node: $runs"
done
for node in "${nodes[@]}"; do
  grep -q 'listening on 0.0.0.0:7000 (mutual TLS, token required)' "$dir/submit/dtlab-$job/node-$node.log" \
    || fail "the daemon on $node did not serve mutual TLS"
done
no_daemons_left "job $job"
say "   job $job: completed over mutual TLS, 2 worker threads on each node"

# A spec that trains for minutes, for the cancellations.
python3 - "$spec" "$dir/submit/long.json" <<'EOF'
import json, sys
spec = json.load(open(sys.argv[1]))
spec["name"] = "long"
spec.setdefault("training", {})["epochs"] = 200
spec["training"]["target_accuracy"] = None
json.dump(spec, open(sys.argv[2], "w"), indent=1)
EOF
# Submits the long spec as project $1, waits until it trains; prints the job's id.
start_long_job() {
  local job out
  job=$(sbatch --nodes=2 --parsable --output="$dir/submit/dtlab-%j.out" "$sbatch_script" \
    "$dir/submit/long.json" "$1") || fail "sbatch of the long job"
  out="$dir/submit/dtlab-$job.out"
  for _ in $(seq 120); do
    grep -q 'all 2 daemons ready' "$out" 2>/dev/null && break
    sleep 1
  done
  grep -q 'all 2 daemons ready' "$out" || { tail -n 20 "$out" >&2; fail "job $job never got its daemons ready"; }
  sleep 3 # training by now
  echo "$job"
}
wait_job_end() {
  for _ in $(seq 120); do
    case "$(job_state "$1")" in PENDING | RUNNING | COMPLETING | "") sleep 1 ;; *) return 0 ;; esac
  done
  fail "job $1 is still $(job_state "$1") 120 s after it was told to stop"
}

# The project NAME.dtlab in the submit folder holds its run as cancelled.
recorded_cancelled() {
  "$cli" project list "$dir/submit/$1.dtlab" --json >"$dir/submit/$1-list.json" \
    || fail "dtlab-cli project list $1.dtlab"
  grep -q '"status":"cancelled"' "$dir/submit/$1-list.json" \
    || fail "the run of $1.dtlab is not recorded as cancelled: $(cat "$dir/submit/$1-list.json")"
}

say "6. a longer job, its batch shell sent TERM mid-run (as --signal=B:TERM@T does)"
job=$(start_long_job long)
out="$dir/submit/dtlab-$job.out"
scancel --batch --signal=TERM "$job"
wait_job_end "$job"
state=$(job_state "$job")
grep -q 'received SIGTERM: cancelling the run' "$out" || { tail -n 20 "$out" >&2; fail "job $job: the batch shell did not see the TERM"; }
case "$state" in COMPLETED | FAILED | CANCELLED) ;; *) fail "job $job is $state after its TERM" ;; esac
recorded_cancelled long
no_daemons_left "job $job"
say "   job $job: $state, the run recorded as cancelled, the daemons gone"

say "7. a longer job cancelled with scancel"
job=$(start_long_job cancelled)
scancel "$job"
wait_job_end "$job"
state=$(job_state "$job")
[ "$state" = CANCELLED ] || fail "job $job is $state after scancel"
no_daemons_left "job $job"
[ ! -e "$dir/submit/dtlab-$job/token" ] || fail "job $job's token file was left behind"
recorded_cancelled cancelled
say "   job $job: $state, the run recorded as cancelled, the daemons gone"

say "8. a job whose daemons cannot start (an unknown dtlab-node flag) fails naming its node"
status=0
DTLAB_NODE_ARGS=--no-such-flag DTLAB_READY_TIMEOUT=30 timeout 300 sbatch --nodes=2 --wait \
  --parsable --output="$dir/submit/dtlab-%j.out" "$sbatch_script" "$spec" broken \
  >"$dir/submit/sbatch-broken.out" 2>&1 || status=$?
job=$(grep -Eo '^[0-9]+' "$dir/submit/sbatch-broken.out" | head -1 || true)
out="$dir/submit/dtlab-$job.out"
[ "$status" -ne 0 ] || fail "job $job succeeded with daemons that cannot start"
grep -q "FAILED: dtlab-node exited before it was ready on .*dtnode[12]" "$out" \
  || { cat "$out" >&2; fail "job $job did not name the node whose daemon failed"; }
grep -q 'no-such-flag' "$out" || { cat "$out" >&2; fail "job $job did not show the daemon's log"; }
[ ! -e "$dir/submit/broken.dtlab" ] || fail "job $job made a project though nothing ran"
say "   job $job: status $status, $(grep -o 'FAILED: .*' "$out" | head -1)"
say "all in $((SECONDS - started)) s"
