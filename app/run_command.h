#pragma once

#include <string>
#include <vector>

namespace dtlab::app {

// `dtlab-cli run SPEC.json [--local-nodes N] [--node HOST:PORT ...] [--token T]
//  [--project P.dtlab] [--quiet]`;
// returns the exit code.
int runCommand(const std::vector<std::string>& argv);

}  // namespace dtlab::app
