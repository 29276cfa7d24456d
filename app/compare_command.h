#pragma once

#include <string>
#include <vector>

namespace dtlab::app {

// `dtlab-cli compare P.dtlab [EXPERIMENT] [--execution N] [--pair VARIANT:BASELINE ...]
// [--format table|csv|json]`: an execution's variants side by side (core/analysis/comparison.h),
// with medians, intervals and ratios over its repetitions; returns the exit code.
int compareCommand(const std::vector<std::string>& argv);

// The --format value, checked: "table", "csv" or "json"; UsageError otherwise.
std::string comparisonFormat(const std::string& format);

}  // namespace dtlab::app
