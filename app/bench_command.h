#pragma once

#include <string>
#include <vector>

namespace dtlab::app {

// `dtlab-cli bench <what> ...`: the flags of each benchmark (remote/bench/) turned into its
// options, its report and --json line printed; returns the exit code.
int benchCommand(const std::vector<std::string>& argv);

// The bench lines of the usage text (every benchmark and its flags).
const char* benchUsage();

}  // namespace dtlab::app
