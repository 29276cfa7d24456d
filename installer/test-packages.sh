#!/usr/bin/env bash
# installer/test-packages.sh: DTLab's .deb packages as a user meets them, in a fresh Debian 12
# root made by debootstrap (root only; .ci/run runs it, a few minutes). It
#   1. installs the dtlab, dtlab-node and dtlab-cli packages of build/packages with apt-get
#      (which must pull every dependency),
#   2. checks the installed desktop entry, AppStream metadata and service unit with
#      desktop-file-validate, appstreamcli and systemd-analyze,
#   3. runs an example spec from / with dtlab-cli (a local cluster of two dtlab-node daemons),
#   4. starts the workbench from its desktop entry's Exec line on that project, under Xvfb,
#      and has it render the project to a PNG; opens an installed example as the start page
#      does (a project in /root/Documents/DTLab) and Help > User Guide on /usr/share/doc/dtlab,
#   5. without CUDA: the programs load no CUDA library and say why cuda:0 is not available,
#      without the dtlab-cuda package and with it (where the build made one: its CUDA libraries
#      are in NVIDIA's repository, so it goes in with dpkg --force-depends, and is purged),
#   6. runs the installed programs on other CPUs (qemu-x86_64): on an x86-64-v3 one without
#      AVX-512 (Haswell) they work; on an older one (Nehalem) they stop at once, naming what
#      the CPU lacks,
#   7. purges the packages and checks that nothing of theirs is left but the user's project.
# Log: build/packages/test-packages.log. Environment: DTLAB_PACKAGE_ROOT (the root's folder,
# default build/package-test-root, kept between runs), DTLAB_DEBIAN_MIRROR.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
packages="$repo/build/packages"
target="${DTLAB_PACKAGE_ROOT:-$repo/build/package-test-root}"
mirror="${DTLAB_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
log_file="$packages/test-packages.log"

say() { printf '[test-packages] %s\n' "$*" | tee -a "$log_file" >&2; }
fail() { say "FAILED: $*"; exit 1; }
in_root() { chroot "$target" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }

[ "$(id -u)" -eq 0 ] || { echo "test-packages.sh: run as root (debootstrap, chroot)" >&2; exit 2; }
if ! ls "$packages"/dtlab_*.deb >/dev/null 2>&1; then
  "$repo/installer/dev.sh" package
fi
mkdir -p "$packages"
: >"$log_file"
command -v debootstrap >/dev/null || apt-get install -y debootstrap >>"$log_file" 2>&1
command -v qemu-x86_64 >/dev/null || apt-get install -y qemu-user >>"$log_file" 2>&1

if [ ! -e "$target/etc/debian_version" ]; then
  say "making a Debian 12 root in $target (debootstrap, minbase)"
  debootstrap --variant=minbase bookworm "$target" "$mirror" >>"$log_file" 2>&1 \
    || fail "debootstrap (see $log_file)"
fi

mounted=()
cleanup() {
  local m
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
for m in proc sys dev dev/pts dev/shm; do
  mkdir -p "$target/$m"
  mount --bind "/$m" "$target/$m"
  mounted+=("$target/$m")
done
cp /etc/resolv.conf "$target/etc/resolv.conf"

say "1. apt-get install of the packages (their dependencies from $mirror)"
rm -rf "$target/tmp/debs" && mkdir -p "$target/tmp/debs"
cp "$packages"/dtlab_*.deb "$packages"/dtlab-node_*.deb "$packages"/dtlab-cli_*.deb "$target/tmp/debs/"
in_root apt-get update >>"$log_file" 2>&1 || fail "apt-get update"
in_root sh -c 'apt-get install -y /tmp/debs/*.deb' >>"$log_file" 2>&1 \
  || fail "apt-get install of the packages (see $log_file)"
in_root dpkg -L dtlab dtlab-node dtlab-cli | sort -u >"$target/tmp/installed-files"
in_root getent passwd dtlab >/dev/null || fail "the system user dtlab was not created"
say "   installed: $(in_root dpkg-query -W -f='${Package} ${Version}, ' dtlab dtlab-node dtlab-cli)"

say "2. the installed desktop entry, AppStream metadata and unit, by their own tools"
in_root apt-get install -y desktop-file-utils appstream systemd xvfb xauth >>"$log_file" 2>&1 \
  || fail "installing the checkers"
in_root desktop-file-validate /usr/share/applications/org.dtlab.DTLab.desktop \
  >>"$log_file" 2>&1 || fail "desktop-file-validate"
in_root appstreamcli validate --no-net /usr/share/metainfo/org.dtlab.DTLab.metainfo.xml \
  >>"$log_file" 2>&1 || fail "appstreamcli validate"
in_root systemd-analyze verify /usr/lib/systemd/system/dtlab-node.service \
  >>"$log_file" 2>&1 || fail "systemd-analyze verify"
in_root sh -c 'dtlab-node --version | head -1; dtlab-cli --version | head -1' >>"$log_file" 2>&1
# The documentation: every page of docs/ with its pictures, and every relative link in it
# leading to a file that was installed.
for page in README.md user-guide.md distributed-runs.md reference/strategies.md images/compare.png; do
  [ -s "$target/usr/share/doc/dtlab/$page" ] || fail "/usr/share/doc/dtlab/$page is not installed"
done
for page in "$target"/usr/share/doc/dtlab/*.md "$target"/usr/share/doc/dtlab/reference/*.md; do
  dir=$(dirname "$page")
  for link in $(grep -o '](\([^)#: ]*\)[)#]' "$page" | sed 's/^](//; s/.$//'); do
    case "$link" in ../*) continue ;; esac  # into the source tree: not part of the packages
    [ -e "$dir/$link" ] || fail "${page#$target}: link to $link leads nowhere once installed"
  done
done

say "3. dtlab-cli runs an installed example from / (two local dtlab-node daemons)"
in_root sh -c 'cd / && rm -f /root/example.dtlab && dtlab-cli run \
  /usr/share/dtlab/examples/default.json --local-nodes 2 --quiet --project /root/example.dtlab' \
  >"$target/tmp/run.out" 2>>"$log_file" || fail "dtlab-cli run (see $log_file)"
tail -1 "$target/tmp/run.out" | grep -q '"status":"completed"' || fail "the run did not complete"
say "   $(grep -o '"final_test_accuracy":[0-9.]*' "$target/tmp/run.out" | head -1)"

say "4. the workbench from its desktop entry's Exec line, on that project, under Xvfb"
exec_line=$(sed -n 's/^Exec=//p' "$target/usr/share/applications/org.dtlab.DTLab.desktop")
command_line=${exec_line//%f//root/example.dtlab}
rm -f "$target/root/example.png"
in_root xvfb-run -a sh -c "$command_line --screenshot /root/example.png" >>"$log_file" 2>&1 \
  || fail "the workbench ($command_line)"
[ -s "$target/root/example.png" ] || fail "the workbench wrote no picture of the project"
cp "$target/root/example.png" "$packages/test-packages-workbench.png"
say "   $command_line: a picture of the project in $packages/test-packages-workbench.png"

say "4b. the start page's example and Help > User Guide, from the installed packages"
rm -rf "$target/root/Documents/DTLab"
in_root xvfb-run -a sh -c "dtlab --example modes_straggler --screenshot /root/example-start.png" \
  >>"$log_file" 2>&1 || fail "dtlab --example modes_straggler (the start page's example)"
[ -s "$target/root/Documents/DTLab/modes_straggler.dtlab" ] \
  || fail "the example did not become /root/Documents/DTLab/modes_straggler.dtlab"
in_root xvfb-run -a sh -c "dtlab --page guide --screenshot /root/guide.png" \
  >"$target/tmp/guide.out" 2>>"$log_file" || fail "Help > User Guide (see $log_file)"
grep -q "(/usr/share/doc/dtlab)" "$target/tmp/guide.out" \
  || fail "Help > User Guide did not read /usr/share/doc/dtlab: $(cat "$target/tmp/guide.out")"
cp "$target/root/example-start.png" "$packages/test-packages-example.png"
cp "$target/root/guide.png" "$packages/test-packages-guide.png"
say "   an example opened as /root/Documents/DTLab/modes_straggler.dtlab; the guide from /usr/share/doc/dtlab"

say "5. without CUDA: no CUDA library loaded, and cuda:0 refused with the reason"
# What `dtlab-node --devices cuda:0` says (it must refuse, exit 2) must contain $1.
refuses_cuda() {
  local out
  out=$(in_root dtlab-node --devices cuda:0 2>&1) && fail "dtlab-node took cuda:0: $out"
  case "$out" in *"$1"*) say "   $(printf '%s' "$out" | head -1)" ;;
    *) fail "dtlab-node --devices cuda:0 did not say '$1': $out" ;; esac
}
in_root sh -c 'ldd /usr/bin/dtlab /usr/bin/dtlab-node /usr/bin/dtlab-cli' >"$target/tmp/ldd.out"
! grep -E 'not found|libcuda|libcublas|libnccl' "$target/tmp/ldd.out" >>"$log_file" \
  || fail "the programs link a CUDA library, or miss one (see $log_file)"
refuses_cuda "no CUDA plugin at /usr/lib/dtlab/libdtlab_cuda.so"
if ls "$packages"/dtlab-cuda_*.deb >/dev/null 2>&1; then
  cp "$packages"/dtlab-cuda_*.deb "$target/tmp/debs/"
  in_root sh -c 'dpkg --force-depends -i /tmp/debs/dtlab-cuda_*.deb' >>"$log_file" 2>&1 \
    || fail "dpkg -i dtlab-cuda"
  refuses_cuda "cannot load the CUDA plugin /usr/lib/dtlab/libdtlab_cuda.so: libcudart.so"
  in_root dpkg --purge dtlab-cuda >>"$log_file" 2>&1 || fail "dpkg --purge dtlab-cuda"
  [ ! -e "$target/usr/lib/dtlab" ] || fail "/usr/lib/dtlab is left after purging dtlab-cuda"
else
  say "   no dtlab-cuda package in $packages (built without nvcc, cuBLAS and NCCL): not tried"
fi

say "6. the installed programs on other CPUs (qemu-x86_64)"
for program in dtlab-node dtlab-cli; do
  qemu-x86_64 -L "$target" -cpu Haswell "$target/usr/bin/$program" --version \
    >>"$log_file" 2>&1 || fail "$program on a Haswell CPU (x86-64-v3, no AVX-512)"
done
if out=$(qemu-x86_64 -L "$target" -cpu Nehalem "$target/usr/bin/dtlab-node" --version 2>&1); then
  fail "dtlab-node ran on a Nehalem CPU (no AVX2)"
fi
case "$out" in *"needs a CPU with AVX, AVX2, FMA"*) say "   Nehalem: $(printf '%s' "$out" | tail -1)" ;;
  *) fail "on a Nehalem CPU dtlab-node did not say what it lacks: $out" ;; esac

say "7. purge: nothing of the packages is left but the user's project"
in_root apt-get purge -y dtlab dtlab-node dtlab-cli >>"$log_file" 2>&1 || fail "apt-get purge"
left=""
while read -r path; do
  [ -f "$target$path" ] && left="$left $path"
done <"$target/tmp/installed-files"
[ -z "$left" ] || fail "left after the purge:$left"
[ ! -e "$target/etc/dtlab" ] || fail "/etc/dtlab is left after the purge"
[ ! -e "$target/var/lib/dtlab" ] || fail "/var/lib/dtlab is left after the purge"
! in_root getent passwd dtlab >/dev/null || fail "the user dtlab is left after the purge"
[ -s "$target/root/example.dtlab" ] || fail "the user's project went with the packages"
say "passed"
