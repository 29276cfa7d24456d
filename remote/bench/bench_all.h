#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtlab::bench {

// `dtlab-cli bench all`: every speed benchmark with a reference, one after another on this
// machine (the training step against PyTorch at the default and a small shape, sync training
// on local daemons against PyTorch DDP, the all-reduce against Gloo's algorithms and a TCP
// stream, the store against one row per point), each side by side with its reference as
// its own command runs it, then one table of the headline figures with their ratios and the
// issue's targets, the machine and its load average.
struct AllBenchOptions {
  bool quick = false;     // fewer repetitions, sizes and rank counts: minutes, for a check
  bool reference = true;  // PyTorch beside DTLab where a benchmark has it, when installed
};

// One figure of the table: DTLab's, the reference's, their ratio (higher is better for
// DTLab) and the target it is held to, if any.
struct AllBenchRow {
  std::string benchmark;  // "core", "train", "allreduce", "allreduce (tcp)", "ps", "store"
  std::string figure;     // what is compared, with its shape or size
  double dtlab = 0.0;
  std::string unit;
  std::string reference;  // what it is compared with ("PyTorch", "best Gloo", ...)
  std::optional<double> referenceValue;
  std::optional<double> ratio;
  std::optional<double> target;  // the ratio the issue asks for
  bool met() const { return ratio && target && *ratio >= *target; }
};

struct AllBenchResult {
  std::vector<AllBenchRow> rows;
  nlohmann::json json;  // the rows and every benchmark's own --json object
};

// Prints each benchmark's report to `progress` as it measures, then the table to `out`.
AllBenchResult runAllBench(const AllBenchOptions& options, std::FILE* out, std::FILE* progress);

}  // namespace dtlab::bench
