#!/usr/bin/env bash
# tests/installer/check_slurm_sbatch.sh: installer/slurm/dtlab.sbatch's own logic (hostfile,
# readiness wait, run, teardown, signals) with real dtlab-node daemons but without Slurm or root:
# fake srun and scontrol shims on PATH run each "node" on this machine, the nodes being the
# loopback addresses 127.0.0.2 and 127.0.0.3 (the fake srun turns the script's
# --listen 0.0.0.0:PORT into --listen NODE:PORT, so that both can use one port). The real
# cluster test is installer/slurm/test-slurm.sh (root, Slurm in network namespaces). Checks:
#   1. a run across both daemons completes; project, node logs, teardown, token removed,
#   2. a TERM to the script mid-run (as sbatch --signal=B:TERM@T sends) records it cancelled,
#   3. daemons that cannot start fail the job at once, naming the nodes, showing their logs,
#   4. a node whose daemon never starts fails the job after DTLAB_READY_TIMEOUT, naming it.
#
#   tests/installer/check_slurm_sbatch.sh [BIN_DIR]    (default: DTLAB_BIN, else PATH)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
script="$repo/installer/slurm/dtlab.sbatch"
spec="$repo/resources/specs/default.json"
bin="${1:-${DTLAB_BIN:-}}"
if [ -z "$bin" ]; then
  bin=$(dirname "$(command -v dtlab-node)") || { echo "no dtlab-node on PATH; give BIN_DIR" >&2; exit 2; }
fi
bin=$(realpath "$bin")
tmp=$(mktemp -d /tmp/dtlab-sbatch-check.XXXXXX)
port=$((20000 + RANDOM % 20000))
nodes=127.0.0.2,127.0.0.3

say() { printf '[check_slurm_sbatch] %s\n' "$*" >&2; }
fail() {
  say "FAILED: $*"
  exit 1
}
# Whatever a failed check left: the processes started from this test's folder, by their ids.
cleanup() {
  local status=$? left
  left=$(pgrep -f -- "$tmp/" | tr '\n' ' ' || true)
  if [ -n "$left" ]; then
    # shellcheck disable=SC2086 # (a list of process ids)
    kill -KILL $left 2>/dev/null || true
  fi
  if [ "$status" -eq 0 ]; then rm -rf "$tmp"; else say "files in $tmp"; fi
}
trap cleanup EXIT

mkdir -p "$tmp/shims" "$tmp/submit"
cp "$spec" "$tmp/submit/default.json"
cat >"$tmp/shims/scontrol" <<'EOF'
#!/usr/bin/env bash
# fake scontrol: only "show hostnames A,B,..."
[ "${1:-} ${2:-}" = "show hostnames" ] || { echo "fake scontrol: $*" >&2; exit 1; }
tr ',' '\n' <<<"$3"
EOF
cat >"$tmp/shims/srun" <<'EOF'
#!/usr/bin/env bash
# fake srun: the command once per node of SLURM_JOB_NODELIST, here, with SLURMD_NODENAME set
# and --listen 0.0.0.0:P made NODE:P; USR1 handed on to the tasks, TERM/INT kill them (as srun
# does). FAKE_SRUN_SILENT=NODE: that node's task starts nothing (a node that never gets ready).
while [ $# -gt 0 ]; do case "$1" in --*) shift ;; *) break ;; esac; done
IFS=, read -ra nodes <<<"$SLURM_JOB_NODELIST"
pids=()
for node in "${nodes[@]}"; do
  args=()
  for a in "$@"; do args+=("${a/#0.0.0.0:/$node:}"); done
  [ "$node" != "${FAKE_SRUN_SILENT:-}" ] || args=(sleep 600)
  SLURMD_NODENAME=$node "${args[@]}" &
  pids+=($!)
done
trap 'kill -USR1 "${pids[@]}" 2>/dev/null' USR1
trap 'kill -KILL "${pids[@]}" 2>/dev/null' TERM INT
status=0
for pid in "${pids[@]}"; do
  s=0
  wait "$pid" || s=$?
  while [ "$s" -gt 128 ] && kill -0 "$pid" 2>/dev/null; do s=0; wait "$pid" || s=$?; done
  [ "$s" -eq 0 ] || status=$s
done
exit "$status"
EOF
chmod +x "$tmp/shims/scontrol" "$tmp/shims/srun"

# Runs the script as sbatch would in job $1 (more arguments: the script's), output to
# $tmp/job-$1.out; job_bg: in the background, its process id in $pid.
job() {
  job_bg "$@"
  wait "$pid"
}
job_bg() {
  local id=$1
  shift
  (cd "$tmp/submit" && PATH="$tmp/shims:$PATH" SLURM_JOB_ID=$id SLURM_JOB_NODELIST=$nodes \
    SLURM_JOB_NUM_NODES=2 SLURM_SUBMIT_DIR="$tmp/submit" DTLAB_BIN="$bin" DTLAB_PORT=$port \
    DTLAB_ADVERTISE=nodename exec bash "$script" "$@") >"$tmp/job-$id.out" 2>&1 &
  pid=$!
}
daemons_left() { pgrep -f -- "--token-file $tmp/" | wc -l || true; }

say "1. a run across two daemons (127.0.0.2, 127.0.0.3, port $port)"
job 1 default.json || { tail -n 30 "$tmp/job-1.out" >&2; fail "the job failed"; }
runs=$(grep '^{"runs":' "$tmp/job-1.out" | tail -1)
grep -q '"status":"completed"' <<<"$runs" || fail "the run did not complete: $runs"
for node in 127.0.0.2 127.0.0.3; do
  grep -q "($node:$port): host " <<<"$runs" || fail "no rank on $node:$port: $runs"
  log="$tmp/submit/dtlab-1/node-$node.log"
  grep -q "^dtlab-node listening on $node:$port" "$log" || fail "$node never said it was listening"
  grep -q '^dtlab-node exited with status 0' "$log" || fail "$node did not stop cleanly: $(tail -n 3 "$log")"
done
[ "$(cat "$tmp/submit/dtlab-1/hostfile")" = "$(printf '127.0.0.2:%s slots=1\n127.0.0.3:%s slots=1' "$port" "$port")" ] \
  || fail "unexpected hostfile: $(cat "$tmp/submit/dtlab-1/hostfile")"
"$bin/dtlab-cli" project list "$tmp/submit/default.dtlab" --json | grep -q '"status":"completed"' \
  || fail "no completed run in $tmp/submit/default.dtlab"
[ ! -e "$tmp/submit/dtlab-1/token" ] || fail "the token file was left behind"
[ "$(daemons_left)" -eq 0 ] || fail "daemons left after the job"

say "2. a TERM to the script mid-run is a cancelled run, recorded"
python3 - "$spec" "$tmp/submit/long.json" <<'EOF'
import json, sys
spec = json.load(open(sys.argv[1]))
spec["training"]["epochs"] = 200
spec["training"]["target_accuracy"] = None
json.dump(spec, open(sys.argv[2], "w"))
EOF
job_bg 2 long.json
for _ in $(seq 60); do grep -q 'all 2 daemons ready' "$tmp/job-2.out" 2>/dev/null && break; sleep 0.5; done
sleep 2
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
[ "$status" -ne 0 ] || fail "the cancelled job ended with status 0"
grep -q 'received SIGTERM: cancelling the run' "$tmp/job-2.out" || fail "no cancel: $(tail "$tmp/job-2.out")"
"$bin/dtlab-cli" project list "$tmp/submit/long.dtlab" --json | grep -q '"status":"cancelled"' \
  || fail "the run is not recorded as cancelled"
[ "$(daemons_left)" -eq 0 ] || fail "daemons left after the cancelled job"

say "3. daemons that cannot start"
status=0
DTLAB_NODE_ARGS=--no-such-flag job 3 default.json broken || status=$?
[ "$status" -ne 0 ] || fail "the job succeeded"
grep -q 'FAILED: dtlab-node exited before it was ready on 127.0.0' "$tmp/job-3.out" \
  || fail "no node named: $(cat "$tmp/job-3.out")"
grep -q 'unknown option --no-such-flag' "$tmp/job-3.out" || fail "no daemon log shown"
[ "$(daemons_left)" -eq 0 ] || fail "daemons left after the failed job"

say "4. a node that never gets ready"
status=0
FAKE_SRUN_SILENT=127.0.0.3 DTLAB_READY_TIMEOUT=3 job 4 default.json silent || status=$?
[ "$status" -ne 0 ] || fail "the job succeeded"
grep -q 'FAILED: no ready daemon on 127.0.0.3 after 3s' "$tmp/job-4.out" \
  || fail "the silent node is not named: $(cat "$tmp/job-4.out")"
[ "$(daemons_left)" -eq 0 ] || fail "daemons left after the timed-out job"
grep -q '^dtlab-node exited with status 0' "$tmp/submit/dtlab-4/node-127.0.0.2.log" \
  || fail "the ready node's daemon was not stopped cleanly"
say "passed"
