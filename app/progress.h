#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/metrics/metrics.h"

namespace dtlab::app {

// Training progress on stderr: a redrawn bar on a terminal, plain lines otherwise
// (one per evaluation, at most one every few seconds in between), so logs stay short.
class ProgressPrinter : public core::MetricSink {
 public:
  ProgressPrinter(std::string label, int64_t totalSteps, bool quiet);
  ~ProgressPrinter() override;

  void onStep(const core::StepMetrics& m) override;
  void onEval(const core::EvalMetrics& m) override;
  void onEvent(const core::RunEvent& e) override;

 private:
  void draw(bool force);
  void endBar();

  std::string label_;
  int64_t totalSteps_;
  bool quiet_;
  bool tty_;
  bool barShown_ = false;
  std::chrono::steady_clock::time_point lastDraw_{};
  core::StepMetrics last_{};   // of worker 0
  std::vector<double> rates_;  // smoothed samples/s per worker
  double smoothedRate_ = 0.0;  // their sum: the run's throughput
  double lastAccuracy_ = -1.0;
};

}  // namespace dtlab::app
