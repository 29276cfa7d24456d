#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/train/core_bench.h"

namespace dtlab::bench {

// `dtlab-cli bench train`: sync_allreduce on local dtlab-node daemons (1 thread each) against
// PyTorch DDP (gloo, as many processes, 1 thread each): per repetition `warmup` untimed steps,
// then the wall clock of `steps` whole steps; repetitions interleaved, medians.
struct TrainBenchOptions {
  core::CoreBenchConfig shape;  // the MLP and the global batch (a multiple of nodes)
  int nodes = 2;
  int repetitions = 5;
  int64_t steps = 50;
  int64_t warmup = 10;
  bool reference = true;  // PyTorch DDP beside, when it is installed
  // The cost of mutual TLS instead: DTLab's daemons serve TLS (certificates made for the run
  // in a temporary directory), and the reference is the same run on daemons in plain text.
  bool tls = false;
};

struct TrainBenchResult {
  double samplesPerS = 0.0;     // median over the repetitions
  std::optional<double> ratio;  // over PyTorch DDP's median, when it ran
  nlohmann::json json;          // everything measured: the CLI's --json line
};

// Prints the report to `out` as it measures; throws when a run fails.
TrainBenchResult runTrainBench(const TrainBenchOptions& options, std::FILE* out);

}  // namespace dtlab::bench
