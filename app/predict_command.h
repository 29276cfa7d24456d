#pragma once

#include <string>
#include <vector>

namespace dtlab::app {

// `dtlab-cli calibrate P.dtlab [RUN...]`: fits the scale simulator's calibration
// (core/analysis/run_calibration.h) from the project's runs and stores it in the project.
int calibrateCommand(const std::vector<std::string>& argv);
// `dtlab-cli predict P.dtlab [EXPERIMENT] --nodes ...`: every variant of the experiment at
// each node count, from the project's newest calibration (core/train/scale_prediction.h),
// beside what its runs measured.
int predictCommand(const std::vector<std::string>& argv);

// Their usage entries, for the CLI's help.
const char* predictUsage();

}  // namespace dtlab::app
