#!/usr/bin/env bash
# The GPU checks in one go, for a machine with an NVIDIA GPU (an H200 is the reference):
#   tests/gpu/run.sh OUT_DIR
# builds DTLab with CUDA (DTLAB_WITH_CUDA=ON) unless DTLAB_GPU_BUILD_DIR already holds such a
# build, runs the GPU test suites (CUDA against CPU: every kernel, every optimizer, a whole
# training step, tf32/bf16 within their rounding, training curves; samples made on the GPU;
# NCCL collectives; a dtlab-node on the GPU with its metrics), then `dtlab-cli bench core --device cuda:0` at several
# batch sizes in fp32 and at the largest in tf32 and bf16, each against the same step's GEMMs
# alone on cuBLAS in the same precision, and `dtlab-cli bench data --device cuda:0` (every dataset
# kind's samples made on the GPU against the host), and writes logs and JSON to OUT_DIR.
# Sized to finish in well under 8 minutes on one H200 once built.
#
# A GPU machine without DTLab's libraries (the lent H200 has the driver and CUDA, no Qt, gRPC
# or Gloo, and no network) runs a build made elsewhere: DTLAB_GPU_BUNDLE=path/to/bundle.tar.xz
# (tests/gpu/bundle.sh makes it) is unpacked, its build path recreated as a link, and its
# libraries put before the machine's CUDA libraries on LD_LIBRARY_PATH.
set -uo pipefail

out="${1:?usage: tests/gpu/run.sh OUT_DIR}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${DTLAB_GPU_BUILD_DIR:-$root/build-gpu}"
mkdir -p "$out"
status=0
log() { printf '[gpu/run.sh] %s\n' "$*" | tee -a "$out/summary.txt" >&2; }

if [ -n "${DTLAB_GPU_BUNDLE:-}" ]; then
  unpacked="$(mktemp -d)"
  tar -C "$unpacked" -xJf "$DTLAB_GPU_BUNDLE" || { log "cannot unpack $DTLAB_GPU_BUNDLE"; exit 1; }
  build="$(cat "$unpacked/bundle/BUILD_DIR")"
  if [ ! -e "$build" ]; then
    mkdir -p "$(dirname "$build")" && ln -s "$unpacked/bundle" "$build"
  fi
  # cuBLAS, cuBLASLt and NCCL: the toolkit's, else the ones Python's CUDA packages carry.
  cuda_dirs=""
  for lib in libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
    found="$(find /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/lib /opt -name "$lib" 2>/dev/null | head -n 1)"
    if [ -n "$found" ]; then
      case ":$cuda_dirs:" in *":$(dirname "$found"):"*) ;; *) cuda_dirs="$cuda_dirs:$(dirname "$found")" ;; esac
    else
      log "$lib not found on this machine"
    fi
  done
  export LD_LIBRARY_PATH="$unpacked/bundle/lib$cuda_dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  log "bundle $DTLAB_GPU_BUNDLE, built in $build; LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
fi

{ nvidia-smi || echo "nvidia-smi: not available"; } >"$out/nvidia-smi.txt" 2>&1
log "GPU: $(nvidia-smi --query-gpu=name,memory.total,compute_cap --format=csv,noheader 2>/dev/null || echo none)"

# Every suite in tests/gpu (tests/CMakeLists.txt names them gpu_<file>).
suites=()
for f in "$root"/tests/gpu/test_*.cc; do suites+=("gpu_$(basename "$f" .cc)"); done
missing=0
for target in "${suites[@]}" app/dtlab-cli app/dtlab-node; do
  case "$target" in app/*) path="$build/$target" ;; *) path="$build/tests/$target" ;; esac
  [ -x "$path" ] || missing=1
done
if [ "$missing" = 1 ]; then
  log "building with CUDA in $build"
  if ! cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDTLAB_WITH_CUDA=ON \
    >"$out/configure.log" 2>&1; then
    log "configure failed (see configure.log)"
    exit 1
  fi
  if ! cmake --build "$build" -j "$(nproc)" --target "${suites[@]}" dtlab-cli dtlab-node \
    >"$out/build.log" 2>&1; then
    log "build failed (see build.log)"
    exit 1
  fi
fi

for suite in "${suites[@]}"; do
  log "$suite"
  if QT_QPA_PLATFORM=offscreen timeout 300 "$build/tests/$suite" -o "$out/$suite.txt,txt" \
    -o "$out/$suite.xml,junitxml"; then
    log "$suite passed"
  else
    log "$suite FAILED (see $suite.txt)"
    status=1
  fi
  grep -E "^(PASS|FAIL|SKIP)" "$out/$suite.txt" >>"$out/summary.txt" 2>/dev/null
done

# The training step of a 1024-4096-4096-10 MLP at growing batches in fp32, and at the largest in
# tf32 and bf16, each against its GEMMs in the same precision.
: >"$out/bench_core.jsonl"
for run in fp32:512 fp32:2048 fp32:8192 fp32:32768 tf32:32768 bf16:32768; do
  precision="${run%%:*}"
  batch="${run##*:}"
  name="bench_core_${precision}_$batch"
  log "bench core --device cuda:0 --precision $precision --batch $batch"
  if timeout 120 "$build/app/dtlab-cli" bench core --device cuda:0 --precision "$precision" \
    --batch "$batch" --in 1024 --hidden 4096 --layers 2 --reps 5 --json >"$out/$name.txt" 2>&1; then
    grep -v '^{' "$out/$name.txt" | tee -a "$out/summary.txt" >&2
    tail -n 1 "$out/$name.txt" >>"$out/bench_core.jsonl"
  else
    log "bench core $precision at batch $batch FAILED (see $name.txt)"
    status=1
  fi
done

# Samples made on the GPU against the host, every dataset kind.
log "bench data --device cuda:0"
if timeout 120 "$build/app/dtlab-cli" bench data --device cuda:0 --samples 100000 --reps 5 \
  --json >"$out/bench_data.txt" 2>&1; then
  grep -v '^{' "$out/bench_data.txt" | tee -a "$out/summary.txt" >&2
  tail -n 1 "$out/bench_data.txt" >"$out/bench_data.json"
else
  log "bench data FAILED (see bench_data.txt)"
  status=1
fi
exit "$status"
