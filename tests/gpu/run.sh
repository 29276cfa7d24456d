#!/usr/bin/env bash
# The GPU checks in one go, for a machine with an NVIDIA GPU (an H200 is the reference):
#   tests/gpu/run.sh OUT_DIR
# builds DTLab with CUDA (DTLAB_WITH_CUDA=ON) unless DTLAB_GPU_BUILD_DIR already holds such a
# build, runs the GPU test suite (CUDA against CPU: every kernel, every optimizer, a whole
# training step), then `dtlab-cli bench core --device cuda:0` at several batch sizes, each
# against the same step's GEMMs alone on cuBLAS, and writes logs and JSON to OUT_DIR.
# Sized to finish in well under 8 minutes on one H200 once built.
set -uo pipefail

out="${1:?usage: tests/gpu/run.sh OUT_DIR}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${DTLAB_GPU_BUILD_DIR:-$root/build-gpu}"
mkdir -p "$out"
status=0
log() { printf '[gpu/run.sh] %s\n' "$*" | tee -a "$out/summary.txt" >&2; }

{ nvidia-smi || echo "nvidia-smi: not available"; } >"$out/nvidia-smi.txt" 2>&1
log "GPU: $(nvidia-smi --query-gpu=name,memory.total,compute_cap --format=csv,noheader 2>/dev/null || echo none)"

if [ ! -x "$build/tests/gpu_test_cuda_backend" ] || [ ! -x "$build/app/dtlab-cli" ]; then
  log "building with CUDA in $build"
  if ! cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDTLAB_WITH_CUDA=ON \
    >"$out/configure.log" 2>&1; then
    log "configure failed (see configure.log)"
    exit 1
  fi
  if ! cmake --build "$build" -j "$(nproc)" --target gpu_test_cuda_backend dtlab-cli \
    >"$out/build.log" 2>&1; then
    log "build failed (see build.log)"
    exit 1
  fi
fi

log "GPU test suite"
if QT_QPA_PLATFORM=offscreen "$build/tests/gpu_test_cuda_backend" -o "$out/gpu_tests.txt,txt" \
  -o "$out/gpu_tests.xml,junitxml"; then
  log "GPU tests passed"
else
  log "GPU tests FAILED (see gpu_tests.txt)"
  status=1
fi
grep -E "^(PASS|FAIL|SKIP)" "$out/gpu_tests.txt" >>"$out/summary.txt" 2>/dev/null

# The training step of a 1024-4096-4096-10 MLP at growing batches, FP32, against its GEMMs.
: >"$out/bench_core.jsonl"
for batch in 512 2048 8192 32768; do
  log "bench core --device cuda:0 --batch $batch"
  if "$build/app/dtlab-cli" bench core --device cuda:0 --batch "$batch" --in 1024 --hidden 4096 \
    --layers 2 --reps 5 --json >"$out/bench_core_$batch.txt" 2>&1; then
    grep -v '^{' "$out/bench_core_$batch.txt" | tee -a "$out/summary.txt" >&2
    tail -n 1 "$out/bench_core_$batch.txt" >>"$out/bench_core.jsonl"
  else
    log "bench core at batch $batch FAILED (see bench_core_$batch.txt)"
    status=1
  fi
done
exit "$status"
