#pragma once

#include <string>
#include <vector>

namespace dtlab::app {

// `dtlab-cli bench <what> ...`; returns the exit code.
int benchCommand(const std::vector<std::string>& argv);

// "machine: <CPU model> (family F model M), N cores, load average A B C": printed by every
// benchmark, since the figures mean little without it (and this machine may be shared).
std::string machineDescription();

// `dtlab-cli bench data`: samples/s of each dataset kind, host and --device (bench_data.cc).
int benchData(const std::vector<std::string>& argv);

// `dtlab-cli bench strategies`: the example comparisons and the README's results table.
int benchStrategies(const std::vector<std::string>& argv);

// The bench lines of the usage text (every benchmark and its flags).
const char* benchUsage();

}  // namespace dtlab::app
