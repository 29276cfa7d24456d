#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/train/core_bench.h"

namespace dtlab::bench {

// `dtlab-cli bench core`: samples/s of whole single-process training steps. On the CPU, at
// each thread count, beside the same steps in PyTorch (when installed), repetitions
// interleaved, with the best sgemm rate measured as the ceiling; on a GPU, the step against
// its own GEMMs alone on cuBLAS.
struct CoreBenchOptions {
  // Shape, repetitions, device (cpu or cuda:N) and, on a GPU, precision; threads are set here.
  core::CoreBenchConfig config;
  int64_t fixedSteps = 0;         // steps per repetition; 0: about config.secondsPerRepetition
  std::vector<int> threadCounts;  // CPU: the counts measured; empty: every one from 1 to the cores
  bool reference = true;          // CPU: PyTorch beside DTLab, when it is installed
};

struct CoreBenchResult {
  int threads = 0;  // the best thread count on the CPU; 1 on a GPU
  double samplesPerS = 0.0;
  double gflops = 0.0;
  std::optional<double> ratio;  // DTLab over PyTorch, each at its best, when PyTorch ran
  nlohmann::json json;          // everything measured: the CLI's --json line
};

// Prints the report to `out` as it measures.
CoreBenchResult runCoreBench(const CoreBenchOptions& options, std::FILE* out);

}  // namespace dtlab::bench
