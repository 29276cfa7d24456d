#pragma once

#include <cstdint>

#include "core/spec/experiment_spec.h"

namespace dtlab::core {

// The learning rate of every optimizer step: linear scaling, then warm-up, then the
// schedule kind. A pure function of the step, so every worker, every thread and a
// restarted run agree on it without sharing any scheduler state.
//
// base = config.lr, times globalBatch / scaleLrBaseBatch when the linear scaling rule
// is on (Goyal et al. 2017). With W = warmupSteps and step counting from 1:
//
//   step <= W:  base * step / W                       (linear, reaches base at step W)
//   otherwise, with e = step - W - 1 (0 at the first step after warm-up):
//     constant: base
//     step:     base * gamma^floor(e / stepSize)
//     cosine:   minLr + (base - minLr) * (1 + cos(pi * e / (T - 1))) / 2, and minLr
//               from e >= T - 1 on, where T = totalSteps - W is the number of steps
//               after warm-up; the floor is reached AT the last step.
//
// PyTorch equivalence: at(k) is what a PyTorch scheduler reports after k - 1 calls of
// scheduler.step() (the usual optimizer.step(); scheduler.step() loop): StepLR(step_size,
// gamma); CosineAnnealingLR(T_max = T - 1, eta_min = minLr); with warm-up, SequentialLR
// of LinearLR(start_factor = 1/W, end_factor = 1, total_iters = W - 1) and the kind's
// scheduler at milestone W. (StepLR therefore decays first at step stepSize + 1.)
//
// totalSteps = 0 means unknown (a time- or accuracy-limited run): cosine then uses
// T = stepSize, i.e. it anneals over stepSize steps after warm-up and stays at minLr
// after that. With 0 < totalSteps <= W the run ends inside warm-up; T is clamped to 1.
class LrSchedule {
 public:
  // Validates config (throws SpecError naming the field) and globalBatch when scaling.
  LrSchedule(const OptimizerConfig& config, int64_t globalBatch, int64_t totalSteps);

  float at(int64_t step) const;  // step counts from 1
  float baseLr() const { return static_cast<float>(base_); }

 private:
  ScheduleConfig schedule_;
  double base_;
  int64_t cosineSteps_;  // T above
};

}  // namespace dtlab::core
