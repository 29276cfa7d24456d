#pragma once

#include <cstdint>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/store/store_bench.h"

namespace dtlab::bench {

// `dtlab-cli bench store`: the project store's ingest rate and downsampled-query latency
// (core/store/store_bench.h), beside one row per point when config.reference is set.
struct StoreBenchOutcome {
  core::StoreBenchResult figures;
  int64_t wrong = 0;    // wrong points and buckets over both sides; nonzero is a failure
  nlohmann::json json;  // everything measured: the CLI's --json line
};

// Prints the table to `out`, progress lines to stderr.
StoreBenchOutcome runStoreBench(const core::StoreBenchConfig& config, std::FILE* out);

}  // namespace dtlab::bench
