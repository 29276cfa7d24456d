#pragma once
// `dtlab-cli bench sim`: the scale simulator's own speed (issue 24: 4,096 nodes x 10,000 steps
// of sync_allreduce and of async_ps, each in under 60 s on one core), on a cluster whose nodes
// differ (one in ten at half speed, one in a hundred pausing) and a model of 40 MB in ten
// buckets on 10 Gbit/s links.
#include <cstdint>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace dtlab::core::sim {

struct SimBenchOptions {
  int nodes = 4096;
  int64_t steps = 10000;
};

// Runs each model once, timed; prints a line per model and the target on `out`.
nlohmann::json runSimBench(const SimBenchOptions& options, std::FILE* out);

}  // namespace dtlab::core::sim
