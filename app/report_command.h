#pragma once

#include <string>
#include <vector>

namespace dtlab::app {

// `dtlab-cli report P.dtlab [EXPERIMENT] [--execution N] -o REPORT.html|pdf`: an execution's
// report as one self-contained file (ui/report/report_export.h), drawn offscreen; returns the
// exit code.
int reportCommand(const std::vector<std::string>& argv);

}  // namespace dtlab::app
