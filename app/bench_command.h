#pragma once

#include <string>
#include <vector>

namespace dtlab::app {

// `dtlab-cli bench <what> ...`; returns the exit code.
int benchCommand(const std::vector<std::string>& argv);

}  // namespace dtlab::app
