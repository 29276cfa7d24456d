#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtlab::bench {

// `dtlab-cli bench checkpoint`: what checkpoints of a large model cost a synchronous run, and
// whether a run killed between them resumes to the same parameters. One spec (an MLP on
// Gaussian blobs, SGD with momentum) run three times as a user runs it (`dtlab-cli run` on
// local daemons, a project file each): without checkpoints; with one every `every` steps; and
// once more, SIGKILLed after a checkpoint drawn from `seed`, then `dtlab-cli resume`d.
struct CheckpointBenchConfig {
  int64_t inputs = 64;
  std::vector<int64_t> hidden = {7100, 7100};  // 50.9 M parameters with 64 inputs, 10 classes
  int64_t classes = 10;
  int64_t batch = 64;  // global
  int64_t steps = 40;
  int64_t every = 10;
  int localNodes = 2;
  std::string strategy = "sync_allreduce";
  uint64_t seed = 0;      // 0: drawn (and printed)
  std::string directory;  // the projects; empty: a scratch directory, removed afterwards
};

struct CheckpointBenchOutcome {
  bool sameParameters = false;  // every run ended with the uninterrupted run's checksum
  // Whether they must: a synchronous run is deterministic; an asynchronous one's order of
  // pushes (and so its parameters) differs from run to run.
  bool mustMatch = false;
  double stallShare = 0.0;  // median stall / median step without checkpoints
  nlohmann::json json;      // everything measured: the CLI's --json line
};

// Prints the table to `out`, progress lines to stderr. Throws Error when a run fails.
CheckpointBenchOutcome runCheckpointBench(const CheckpointBenchConfig& config, std::FILE* out);

}  // namespace dtlab::bench
