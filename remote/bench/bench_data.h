#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtlab::bench {

// `dtlab-cli bench data`: how fast each dataset kind's samples are made, on the host (the
// dataset, one thread, as a worker makes them) and, with a GPU device, by that GPU's sample
// source into its memory (the same generator function), repetitions interleaved, medians.
struct DataBenchOptions {
  std::vector<std::string> kinds;  // dataset kind names; empty: dataBenchKinds()
  int64_t samples = 20000;         // training samples of each kind (default sizes)
  int repetitions = 5;
  std::string device = "cpu";  // or cuda:N: that GPU's sample source beside the host
};

struct DataKindResult {
  std::string kind;
  int64_t features = 0;
  double hostRate = 0.0;    // samples/s, median
  double deviceRate = 0.0;  // samples/s, median; 0 without a device or a device generator
};

struct DataBenchResult {
  std::vector<DataKindResult> kinds;
  nlohmann::json json;  // everything measured: the CLI's --json line
};

// Every registered dataset kind (core/data/dataset_kinds.h), in the order the benchmark
// measures them.
std::vector<std::string> dataBenchKinds();

// Prints the table to `out` as it measures. Throws OptionError for a device whose samples are
// made on the host anyway.
DataBenchResult runDataBench(const DataBenchOptions& options, std::FILE* out);

}  // namespace dtlab::bench
