#!/usr/bin/env bash
# installer/test-packages.sh: DTLab's .deb packages as a user meets them, in a fresh Debian 12
# root made by debootstrap (root only; run by hand, not in CI: the root and the packages'
# dependencies take minutes to fetch). It
#   1. installs build/packages/dtlab*.deb with apt-get (which must pull every dependency),
#   2. checks the installed desktop entry, AppStream metadata and service unit with
#      desktop-file-validate, appstreamcli and systemd-analyze,
#   3. runs an example spec from / with dtlab-cli (a local cluster of two dtlab-node daemons),
#   4. starts the workbench from its desktop entry's Exec line on that project, under Xvfb,
#      and has it render the project to a PNG,
#   5. purges the packages and checks that nothing of theirs is left but the user's project.
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
cp "$packages"/dtlab*.deb "$target/tmp/debs/"
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

say "5. purge: nothing of the packages is left but the user's project"
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
