#!/usr/bin/env bash
# DTLab developer entry point: deps | build | test | run | bench | docs.
#   installer/dev.sh test   installs what is missing, builds, runs every test
#                           (--sanitize address,undefined | thread: in a sanitizer build)
#   installer/dev.sh run    installs what is missing, builds, runs the main job
#   installer/dev.sh faults [--seed S] [--count N] [--only KIND] [--policy P]
#                           builds, then hits real runs with N seeded faults (default 40;
#                           tests/faults): killed, stopped and cut-off nodes, coordinators, a full
#                           disk, a read-only project (root for the cut, the disk and the project)
#   installer/dev.sh docs   builds, then remakes docs/reference and the pictures in docs/images
#   installer/dev.sh package
#                           builds a release tree for x86-64-v3 (build-package/, or
#                           $DTLAB_PACKAGE_BUILD_DIR: CI points it at the tested tree) and writes the
#                           .deb packages dtlab, dtlab-node and dtlab-cli to build/packages/,
#                           and dtlab-cuda (the CUDA plugin) where nvcc, cuBLAS and NCCL are found
#   installer/dev.sh fuzz [SECONDS] [TARGET...]
#                           builds the libFuzzer targets (tests/fuzz, clang) and runs each
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${DTLAB_BUILD_DIR:-$root/build}"
jobs="${DTLAB_JOBS:-$(nproc)}"

# Debian 12 packages the build and the tests need.
packages=(
  build-essential cmake ninja-build pkg-config
  nlohmann-json3-dev   # experiment specs, summaries
  libdnnl-dev          # oneDNN: the CPU backend's GEMM (threads with OpenMP)
  qt6-base-dev         # the GUI (ui/) and Qt Test for the test suites (core/ never links Qt)
  qt6-svg-dev          # SVG chart export
  qtkeychain-qt6-dev libsecret-1-0  # node tokens in the desktop's keyring (QtKeychain, libsecret)
  dbus-daemon dbus-bin gnome-keyring  # the GUI tests' own Secret Service (tests/ui/keyring_session.h)
  libqcustomplot-dev libqcustomplot2.1-qt6  # charts (QCustomPlot, its Qt 6 build)
  xvfb                 # real windows for screenshots and GUI checks without a display
  libsqlite3-dev       # project files (core/store)
  libgloo-dev          # CPU collectives over TCP (core/comm)
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc  # node protocol
  libssl-dev           # certificates for mutual TLS (dtlab-node gen-certs)
  iproute2             # the multi-host test builds network namespaces with `ip`
  chromium poppler-utils  # tests look at the experiment report: HTML in headless Chromium,
                          # PDF pages through pdftoppm (neither is needed to write one)
  fonts-dejavu-core       # the report's and the charts' font, in Qt and in the browser
  systemd                 # systemd-analyze verify checks the node service's unit (installer/systemd)
  desktop-file-utils appstream  # the workbench's desktop entry and AppStream metadata are checked
  python3-yaml            # tests/installer/check_k8s.py parses the Kubernetes manifests
)
# Only for side-by-side reference numbers in `dtlab-cli bench`; never a build or test
# dependency. Debian's PyTorch takes its GEMM from whatever libblas.so.3 is selected, on a
# fresh machine the reference BLAS (about 2 GFLOP/s), so the reference brings OpenBLAS, in
# its OpenMP build: the pthread build's threads fight PyTorch's OpenMP threads for the
# cores (measured here: several times slower at 2 threads).
bench_packages=(python3-torch libopenblas0-openmp)
# Only for `dev.sh fuzz`: clang with libFuzzer and the sanitizer runtimes, and clang's OpenMP.
fuzz_packages=(clang libclang-rt-dev libomp-dev)

log() { printf '[dev.sh] %s\n' "$*" >&2; }

missing_packages() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$' || echo "$p"
  done
}

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

install_packages() {
  local missing
  missing=$(missing_packages "$@")
  [ -z "$missing" ] && return 0
  log "installing: $(echo $missing)"
  export DEBIAN_FRONTEND=noninteractive
  # A fresh machine has no package lists yet; refresh once, then install.
  as_root apt-get update -qq
  # shellcheck disable=SC2086
  as_root apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

# Points libblas.so.3, liblapack.so.3 and libopenblas.so.0 at OpenBLAS's OpenMP build. The
# alternatives system would otherwise prefer the pthread build wherever both are installed
# (priority 100 against 95), and the reference BLAS where OpenBLAS is not. All three:
# the OpenMP build's libblas.so.3 is a thin library that loads libopenblas.so.0 through
# its own alternative, so selecting libblas.so.3 alone can still run the pthread build.
select_openblas_openmp() {
  local arch lib name want
  arch=$(gcc -print-multiarch)
  for lib in libblas.so.3 liblapack.so.3 libopenblas.so.0; do
    name="$lib-$arch"
    want="/usr/lib/$arch/openblas-openmp/$lib"
    [ -e "$want" ] || continue
    if [ "$(update-alternatives --query "$name" 2>/dev/null | sed -n 's/^Value: //p')" != "$want" ]; then
      log "selecting OpenBLAS (OpenMP build) for $lib"
      as_root update-alternatives --set "$name" "$want" >/dev/null
    fi
  done
}

deps() {
  install_packages "${packages[@]}"
  if [ "${1:-}" = "--bench" ]; then
    install_packages "${bench_packages[@]}"
    select_openblas_openmp
  fi
}

# The sanitizers of `test --sanitize LIST` (empty: a normal build); they build in a tree of
# their own (build-sanitize-LIST), optimised, with line tables for the reports. The ASan +
# UBSan tree is clang's and instrumented for libFuzzer as well: `fuzz` builds its targets in
# it, so CI builds the sanitized project once for both.
sanitize=""

configure() {
  local werror=OFF type="${DTLAB_BUILD_TYPE:-Release}" compilers=()
  [ "${CI:-}" = "true" ] && werror=ON
  [ -n "$sanitize" ] && type=RelWithDebInfo
  if [ "$sanitize" = "address,undefined" ]; then
    install_packages "${fuzz_packages[@]}"
    compilers=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DDTLAB_FUZZ=ON)
  fi
  # DTLAB_ARCH: the CPU to compile for (default: this machine's); CI builds the tested tree
  # for the packages' x86-64-v3 so that `package` can reuse it.
  local arch=()
  [ -n "${DTLAB_ARCH:-}" ] && arch=(-DDTLAB_ARCH="$DTLAB_ARCH")
  cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="$type" \
    -DDTLAB_WERROR="$werror" -DDTLAB_SANITIZE="$sanitize" "${compilers[@]}" "${arch[@]}" >/dev/null
}

build() {
  configure
  cmake --build "$build_dir" -j "$jobs"
}

run_tests() {
  cd "$build_dir"
  # Reports name the source line; a leak or a race fails the test that caused it.
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}"
  export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$root/tests/sanitizers/lsan.supp:print_suppressions=0}"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
  export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:die_after_fork=0:suppressions=$root/tests/sanitizers/tsan.supp}"
  # One suite per core (the timing-sensitive ones run alone: tests/CMakeLists.txt).
  ctest --output-on-failure -j "${DTLAB_TEST_JOBS:-$(nproc)}" "$@"
}

# `test --sanitize LIST [ctest args]`: LIST is address,undefined or thread.
parse_sanitize() {
  if [ "${1:-}" = "--sanitize" ]; then
    case "${2:-}" in
      address,undefined | undefined,address) sanitize=address,undefined ;;
      address | undefined | thread) sanitize="$2" ;;
      *) echo "dev.sh test --sanitize: expected address,undefined or thread, got '${2:-}'" >&2; exit 2 ;;
    esac
    build_dir="${DTLAB_BUILD_DIR:-$root/build-sanitize-${sanitize//,/-}}"
  fi
}

# `fuzz [SECONDS] [TARGET...]`: each target (all by default: spec, chunk, project, rpc,
# stream, compare_layout) for SECONDS (default 60) from its seeds, built in the ASan + UBSan
# tree (build-sanitize-address-undefined, clang). Inputs that reach new code are kept in
# its corpus/NAME for the next run; a finding is saved in its findings/NAME/ and fails the
# command. Prints, per target, executions per second and the coverage reached.
fuzz() {
  local seconds=60 failed=0
  if [[ "${1:-}" =~ ^[0-9]+$ ]]; then seconds="$1"; shift; fi
  parse_sanitize --sanitize address,undefined
  configure
  cmake --build "$build_dir" -j "$jobs" --target dtlab_fuzzers
  local target seeds name log wanted
  while read -r target seeds; do
    name="${target#fuzz_}"
    if [ $# -gt 0 ]; then
      wanted=0
      for w in "$@"; do [ "$w" = "$name" ] && wanted=1; done
      [ "$wanted" = 1 ] || continue
    fi
    mkdir -p "$build_dir/corpus/$name" "$build_dir/findings/$name" "$build_dir/logs"
    log="$build_dir/logs/$name.log"
    local dict=()
    [ -f "$root/tests/fuzz/$name.dict" ] && dict=(-dict="$root/tests/fuzz/$name.dict")
    log "fuzzing $name for ${seconds}s (log: $log)"
    # shellcheck disable=SC2086
    if ! (cd "$build_dir" && ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" \
          QT_QPA_PLATFORM=offscreen \
          "$build_dir/tests/fuzz/$target" -max_total_time="$seconds" -timeout=60 -rss_limit_mb=4096 \
          -print_final_stats=1 "${dict[@]}" -artifact_prefix="$build_dir/findings/$name/" \
          "$build_dir/corpus/$name" $seeds >"$log" 2>&1); then
      failed=1
      log "FINDING in $name: $(ls -t "$build_dir/findings/$name" | head -1) (see $log); keep it as a test:"
      log "  cp $build_dir/findings/$name/<file> $root/tests/fuzz/findings/$name/"
      grep -m5 -E "FINDING|ERROR: |SUMMARY" "$log" >&2 || true
    fi
    printf '%-16s %10s runs %8s exec/s  %s\n' "$name" \
      "$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)" \
      "$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)" \
      "$(grep -E '^#[0-9]+' "$log" | tail -1 | grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9]+[a-zA-Z]*')"
  done <"$build_dir/tests/fuzz/targets.txt"
  return "$failed"
}

cmd="${1:-help}"
[ $# -gt 0 ] && shift
case "$cmd" in
  deps) deps "$@" ;;
  build) deps; build ;;
  test)
    parse_sanitize "$@"
    [ -n "$sanitize" ] && shift 2
    # --fast: the suites labelled fast (every one that takes seconds, not tens of seconds).
    fast=()
    if [ "${1:-}" = "--fast" ]; then fast=(-L fast); shift; fi
    deps
    build
    run_tests "${fast[@]}" "$@"
    ;;
  run)
    deps
    build
    example="$build_dir/example.dtlab"
    if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
      # A display: the workbench on an example project (a recorded 4-node run of
      # bench_sync.json whose experiment can be run again from the window).
      if [ ! -e "$example" ]; then
        log "recording an example run into $example"
        "$build_dir/app/dtlab-cli" run "$root/resources/specs/bench_sync.json" --quiet \
          --project "$example" >/dev/null
      fi
      exec "$build_dir/app/dtlab" "$example" "$@"
    fi
    # No display: train the default example spec headless and print its summary.
    "$build_dir/app/dtlab-cli" train "$root/resources/specs/default.json" --project "$example" "$@"
    log "no display: to open the workbench on this project, run: $build_dir/app/dtlab $example"
    log "(or without a display: xvfb-run $build_dir/app/dtlab $example --screenshot out.png)"
    ;;
  docs)
    # The generated reference (docs/reference) and the pictures (docs/images), remade from
    # this build: installer/docs_pictures.sh records the projects it photographs.
    deps
    build
    "$build_dir/app/dtlab-cli" docs --out "$root/docs/reference"
    "$root/installer/docs_pictures.sh" --build "$build_dir"
    ;;
  faults)
    deps
    build
    "$build_dir/tests/faults/dtlab_faults" "$@"
    ;;
  fuzz)
    deps
    fuzz "$@"
    ;;
  package)
    # A tree of its own, without the tests, for any x86-64 CPU since about 2015 (x86-64-v3:
    # AVX2, FMA), not the building machine's. The programs link no CUDA library; where nvcc,
    # cuBLAS and NCCL are found the tree also builds the CUDA plugin, packaged as dtlab-cuda.
    deps
    install_packages dpkg-dev  # dpkg-shlibdeps computes the packages' dependencies
    # A tree passed in (a tested one) keeps its tests: a later `test` there still finds them.
    package_dir="${DTLAB_PACKAGE_BUILD_DIR:-$root/build-package}"
    tests=(-DDTLAB_BUILD_TESTS=OFF)
    [ -n "${DTLAB_PACKAGE_BUILD_DIR:-}" ] && tests=()
    cmake -S "$root" -B "$package_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DDTLAB_ARCH=x86-64-v3 -DDTLAB_WITH_CUDA=AUTO "${tests[@]}" >/dev/null
    targets=(dtlab dtlab-node dtlab-cli)
    if grep -q '^#define DTLAB_HAVE_CUDA 1' "$package_dir/generated/core/common/config.h"; then
      targets+=(dtlab_cuda)
    fi
    cmake --build "$package_dir" -j "$jobs" --target "${targets[@]}"
    mkdir -p "$root/build/packages"
    (cd "$package_dir" && cpack -G DEB -B "$root/build/packages" >/dev/null)
    rm -rf "$root/build/packages/_CPack_Packages"
    log "packages in $root/build/packages:"
    ls -1 "$root/build/packages"/*.deb >&2
    ;;
  bench)
    # PyTorch serves the reference side of the speed benchmarks; the strategy comparisons
    # have none (their reference is the equal split / synchronous variant in the same run).
    if [ "${1:-core}" = "strategies" ]; then deps; else deps --bench; fi
    build
    "$build_dir/app/dtlab-cli" bench "${@:-core}"
    ;;
  *)
    echo "usage: installer/dev.sh deps [--bench] | build | test [--sanitize address,undefined|thread] [--fast] [ctest args] | run | bench [what] | docs | faults [--seed S] [--count N] [--only KIND] [--policy P] | fuzz [SECONDS] [TARGET...] | package" >&2
    [ "$cmd" = "help" ] && exit 0
    exit 2
    ;;
esac
