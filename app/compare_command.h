#pragma once

#include <string>
#include <vector>

namespace dtlab::app {

// `dtlab-cli compare P.dtlab [EXPERIMENT] [--format table|csv|json]`: the experiment's
// variants side by side (core/store/comparison.h); returns the exit code.
int compareCommand(const std::vector<std::string>& argv);

// The --format value, checked: "table", "csv" or "json"; UsageError otherwise.
std::string comparisonFormat(const std::string& format);

}  // namespace dtlab::app
