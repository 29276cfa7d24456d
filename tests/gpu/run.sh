#!/usr/bin/env bash
# The GPU checks in one go, for a machine with an NVIDIA GPU (an H200 is the reference):
#   tests/gpu/run.sh OUT_DIR
# builds DTLab with CUDA (DTLAB_WITH_CUDA=ON) unless DTLAB_GPU_BUILD_DIR already holds such a
# build, runs the GPU test suites (CUDA against CPU: every kernel, every optimizer, a whole
# training step, tf32/bf16 within their rounding, training curves; samples made on the GPU;
# NCCL collectives; a dtlab-node on the GPU with its metrics), then `dtlab-cli bench core
# --device cuda:0` at several batch sizes in fp32, tf32 and bf16, each against the same step's
# GEMMs alone on cuBLAS in the same precision (and PyTorch's step where python3 has it), and
# `dtlab-cli bench data --device cuda:0` (every dataset kind's samples made on the GPU against
# the host), then the one-GPU accuracy curve of tests/gpu/curve.json against the CPU's (curve.csv) and tests/gpu/node.json on a dtlab-node
# with its GPU's gpu_util and gpu_mem_bytes (node_metrics.csv), and writes logs, JSON and CSV to
# OUT_DIR. DTLAB_GPU_SANITIZE=1 adds compute-sanitizer's memcheck over the backend suite,
# DTLAB_GPU_PROFILE=1 Nsight Compute's kernel times of a few steps, DTLAB_GPU_TORCH=0 leaves
# PyTorch's steps out; DTLAB_GPU_PARTS (default "suites bench data curve node") picks the parts,
# DTLAB_GPU_BENCH_RUNS (precision:batch ..., default fp32, tf32 and bf16 from 512 to 32768) the
# benchmarks.
# Every step has its own time limit (DTLAB_GPU_SUITE_TIMEOUT, default 120 s, for a suite;
# DTLAB_GPU_STEP_TIMEOUT, default 90 s, for a benchmark or a training run), so a hang costs
# one step, not the lease. On an H200, from a bundle: about 4 minutes, 2 without PyTorch.
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
suite_timeout="${DTLAB_GPU_SUITE_TIMEOUT:-120}"
step_timeout="${DTLAB_GPU_STEP_TIMEOUT:-90}"
status=0
started=$SECONDS
# The parts to run (DTLAB_GPU_PARTS, default all): suites bench data curve node.
part() { [[ " ${DTLAB_GPU_PARTS:-suites bench data curve node} " == *" $1 "* ]]; }
log() { printf '[gpu/run.sh %4ds] %s\n' "$((SECONDS - started))" "$*" | tee -a "$out/summary.txt" >&2; }

# The machine's own library path, for its own programs (python3): the bundle's C++ runtime,
# older than the one PyTorch needs, must not reach them.
host_library_path="${LD_LIBRARY_PATH:-}"
on_host=(env LD_LIBRARY_PATH="$host_library_path")
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

cli="$build/app/dtlab-cli"
# The benchmarks' model: 1024-4096-4096-10.
shape=(--in 1024 --hidden 4096 --layers 2)
if part suites; then
  for suite in "${suites[@]}"; do
    log "$suite"
    if QT_QPA_PLATFORM=offscreen timeout "$suite_timeout" "$build/tests/$suite" -o "$out/$suite.txt,txt" \
      -o "$out/$suite.xml,junitxml"; then
      log "$suite passed"
    else
      log "$suite FAILED (see $suite.txt)"
      status=1
    fi
    grep -E "^(PASS|FAIL|SKIP)" "$out/$suite.txt" >>"$out/summary.txt" 2>/dev/null
  done
fi

# The training step of a 1024-4096-4096-10 MLP at growing batches in fp32, tf32 and bf16, each
# against its GEMMs in the same precision, and, where this machine's python3 has PyTorch with
# CUDA, PyTorch's step of the same model on the same GPU in the same precision
# (resources/bench/torch_step.py; bf16 through autocast). bench_core.jsonl gets DTLab's JSON
# lines, bench_torch.jsonl PyTorch's.
if part bench; then
  torch_gpu=0
  [ "${DTLAB_GPU_TORCH:-1}" = 1 ] && "${on_host[@]}" python3 -c \
    'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null && torch_gpu=1
  : >"$out/bench_core.jsonl"
  : >"$out/bench_torch.jsonl"
  for run in ${DTLAB_GPU_BENCH_RUNS:-fp32:512 fp32:2048 fp32:8192 fp32:32768 tf32:2048 tf32:8192 \
    tf32:32768 bf16:2048 bf16:8192 bf16:32768}; do
    precision="${run%%:*}"
    batch="${run##*:}"
    name="bench_core_${precision}_$batch"
    log "bench core --device cuda:0 --precision $precision --batch $batch"
    if timeout "$step_timeout" "$cli" bench core --device cuda:0 --precision "$precision" \
      --batch "$batch" "${shape[@]}" --reps 5 --json >"$out/$name.txt" 2>&1; then
      grep -v '^{' "$out/$name.txt" | tee -a "$out/summary.txt" >&2
      tail -n 1 "$out/$name.txt" >>"$out/bench_core.jsonl"
    else
      log "bench core $precision at batch $batch FAILED (see $name.txt)"
      status=1
    fi
    [ "$torch_gpu" = 1 ] || continue
    if timeout "$step_timeout" "${on_host[@]}" python3 "$root/resources/bench/torch_step.py" \
      --device cuda:0 --precision "$precision" --batch "$batch" "${shape[@]}" --reps 5 \
      >"$out/torch_$name.txt" 2>&1; then
      line="$(tail -n 1 "$out/torch_$name.txt")"
      printf '{"precision":"%s","batch":%s,"torch":%s}\n' "$precision" "$batch" "$line" \
        >>"$out/bench_torch.jsonl"
      log "  PyTorch on the same GPU: $line"
    else
      log "PyTorch's step, $precision at batch $batch, FAILED (see torch_$name.txt)"
    fi
  done
fi

# Samples made on the GPU against the host, every dataset kind.
if part data; then
  log "bench data --device cuda:0"
  if timeout "$step_timeout" "$cli" bench data --device cuda:0 --samples 100000 --reps 5 \
    --json >"$out/bench_data.txt" 2>&1; then
    grep -v '^{' "$out/bench_data.txt" | tee -a "$out/summary.txt" >&2
    tail -n 1 "$out/bench_data.txt" >"$out/bench_data.json"
  else
    log "bench data FAILED (see bench_data.txt)"
    status=1
  fi
fi

# The one-GPU accuracy curve against the CPU's (every thread of this machine): the same spec,
# seed and batches; test_accuracy at every evaluation, one row per step with both devices.
if part curve; then
  spec="$root/tests/gpu/curve.json"
  for device in cuda:0 cpu; do
    name="curve_${device%%:*}"
    rm -f "$out/$name.dtlab"
    log "train tests/gpu/curve.json --device $device"
    if timeout "$step_timeout" "$cli" train "$spec" --device "$device" --quiet \
      --project "$out/$name.dtlab" >"$out/$name.txt" 2>&1; then
      "$cli" project export-csv "$out/$name.dtlab" 1 --key test_accuracy -o "$out/$name.csv" \
        >/dev/null 2>&1
      tail -n 1 "$out/$name.txt" | grep -o '"samples_per_s":[0-9.]*\|"final_test_accuracy":[0-9.]*' |
        tr '\n' ' ' | sed "s/^/$device: /" | tee -a "$out/summary.txt" >&2
      echo >&2
    else
      log "train on $device FAILED (see $name.txt)"
      status=1
    fi
  done
  if [ -f "$out/curve_cuda.csv" ] && [ -f "$out/curve_cpu.csv" ]; then
    join -t, -1 1 -2 1 <(awk -F, 'NR > 1 {print $5 "," $7}' "$out/curve_cuda.csv" | sort -t, -k1,1) \
      <(awk -F, 'NR > 1 {print $5 "," $7}' "$out/curve_cpu.csv" | sort -t, -k1,1) |
      sort -t, -k1,1n | { echo "step,cuda_accuracy,cpu_accuracy"; cat; } >"$out/curve.csv"
    log "accuracy curve, GPU against CPU (curve.csv):"
    { column -t -s, "$out/curve.csv" 2>/dev/null || cat "$out/curve.csv"; } | tee -a "$out/summary.txt" >&2
  fi
fi

# A larger model for 10 s on a dtlab-node given the GPU (tests/gpu/node.json): the daemon's
# gpu_util and gpu_mem_bytes, sampled every half second, as the project records them.
if part node; then
  rm -f "$out/node.dtlab"
  log "run tests/gpu/node.json --local-nodes 1 (a daemon on cuda:0)"
  if timeout "$step_timeout" "$cli" run "$root/tests/gpu/node.json" --local-nodes 1 --quiet --project "$out/node.dtlab" \
    >"$out/node.txt" 2>&1; then
    "$cli" project export-csv "$out/node.dtlab" 1 --key gpu_util --key gpu_mem_bytes \
      --key samples_per_s -o "$out/node_metrics.csv" >/dev/null 2>&1
    awk -F, 'NR > 1 {n[$4]++; s[$4] += $7; if ($7 > m[$4]) m[$4] = $7}
      END {for (k in n) printf "%s: mean %.4g, max %.4g over %d points\n", k, s[k] / n[k], m[k], n[k]}' \
      "$out/node_metrics.csv" | tee -a "$out/summary.txt" >&2
  else
    log "run on a GPU daemon FAILED (see node.txt)"
    status=1
  fi
fi

if [ "${DTLAB_GPU_SANITIZE:-0}" = 1 ] && command -v compute-sanitizer >/dev/null; then
  log "compute-sanitizer --tool memcheck gpu_test_cuda_backend"
  if timeout "$suite_timeout" compute-sanitizer --tool memcheck --error-exitcode 3 \
    "$build/tests/gpu_test_cuda_backend" >"$out/sanitizer.txt" 2>&1; then
    log "memcheck clean"
  else
    log "memcheck FAILED or timed out (see sanitizer.txt)"
    status=1
  fi
fi
# Nsight Compute's time of every kernel of a few steps (after the warm-up) in tf32 and bf16 at
# the largest batch: where a step's time goes beside its GEMMs. ncu runs on the machine's own
# libraries; the program it starts gets the bundle's.
if [ "${DTLAB_GPU_PROFILE:-0}" = 1 ] && command -v ncu >/dev/null; then
  for precision in tf32 bf16; do
    log "ncu: kernel times of $precision steps at batch 32768 (profile_$precision.csv)"
    timeout "$step_timeout" "${on_host[@]}" ncu --clock-control none --target-processes all \
      --metrics gpu__time_duration.sum --launch-skip 400 --launch-count 80 --csv \
      env LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" "$cli" bench core --device cuda:0 \
      --precision "$precision" --batch 32768 "${shape[@]}" --reps 1 --steps 10 \
      >"$out/profile_$precision.csv" 2>"$out/profile_$precision.log" ||
      log "ncu over $precision FAILED (see profile_$precision.log)"
  done
fi
log "done, status $status"
exit "$status"
