#!/usr/bin/env bash
# Packs a CUDA build made here for a GPU machine that has the NVIDIA driver and the CUDA
# toolkit but none of DTLab's other libraries and no network (the lent H200 is such a one):
#   tests/gpu/bundle.sh [BUILD_DIR] [OUT]
# BUILD_DIR (default build-cuda) must be configured with DTLAB_WITH_CUDA=ON or AUTO on a
# machine with nvcc; OUT (default .gpu-bundle/dtlab-gpu.tar.xz, a folder git ignores through
# .git/info/exclude) gets the GPU test suites, dtlab-cli and dtlab-node, and every shared library
# they load except the C runtime and the big CUDA libraries (cuBLAS, cuBLASLt, NCCL), which the
# GPU machine has; the CUDA plugin goes to lib/dtlab, where the programs look for it (beside their
# app/ and tests/ directories). tests/gpu/run.sh unpacks it there when DTLAB_GPU_BUNDLE names it.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "${1:-$root/build-cuda}" && pwd)"
out="${2:-$root/.gpu-bundle/dtlab-gpu.tar.xz}"
# Every suite in tests/gpu (tests/CMakeLists.txt names them gpu_<file>).
suites=()
for f in "$root"/tests/gpu/test_*.cc; do suites+=("gpu_$(basename "$f" .cc)"); done

grep -q '^#define DTLAB_HAVE_CUDA 1' "$build/generated/core/common/config.h" 2>/dev/null || {
  echo "bundle.sh: $build is not a CUDA build (DTLAB_HAVE_CUDA is not 1)" >&2
  exit 1
}
cmake --build "$build" --target "${suites[@]}" dtlab-cli dtlab-node dtlab_cuda >/dev/null

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bundle/app" "$stage/bundle/tests" "$stage/bundle/lib/dtlab"
binaries=("$build/app/dtlab-cli" "$build/app/dtlab-node" "$build/lib/dtlab/libdtlab_cuda.so")
cp "$build/lib/dtlab/libdtlab_cuda.so" "$stage/bundle/lib/dtlab/"
for s in "${suites[@]}"; do binaries+=("$build/tests/$s"); done
cp "$build/app/dtlab-cli" "$build/app/dtlab-node" "$stage/bundle/app/"
for s in "${suites[@]}"; do cp "$build/tests/$s" "$stage/bundle/tests/"; done

# The libraries the binaries load, but the C runtime (the GPU machine's own is newer) and the
# CUDA libraries that machine has (its toolkit's and its Python packages').
ldd "${binaries[@]}" | awk '/=> \//{print $3}' | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | ld-linux* | libgcc_s.so.*) ;;
    libcublas.so.* | libcublasLt.so.* | libnccl.so.* | libcuda.so.*) ;;
    *) cp -L "$lib" "$stage/bundle/lib/" ;;
  esac
done
# The tests find dtlab-node at the path they were built with: record it.
printf '%s\n' "$build" >"$stage/bundle/BUILD_DIR"
mkdir -p "$(dirname "$out")"
tar -C "$stage" -cJf "$out" bundle
echo "bundle.sh: $(du -h "$out" | cut -f1) in $out (built in $build)"
