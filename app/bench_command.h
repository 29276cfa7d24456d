#pragma once

#include <string>
#include <vector>

namespace dtlab::app {

// `dtlab-cli bench <what> ...`; returns the exit code.
int benchCommand(const std::vector<std::string>& argv);

// "machine: <CPU model> (family F model M), N cores, load average A B C": printed by every
// benchmark, since the figures mean little without it (and this machine may be shared).
std::string machineDescription();

// The bench lines of the usage text (every benchmark and its flags).
const char* benchUsage();

}  // namespace dtlab::app
