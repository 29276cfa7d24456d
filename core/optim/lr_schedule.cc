#include "core/optim/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/common/check.h"
#include "core/optim/decimal_value.h"
#include "core/optim/optimizer.h"

namespace dtlab::core {

LrSchedule::LrSchedule(const OptimizerConfig& config, int64_t globalBatch, int64_t totalSteps)
    : schedule_(config.schedule), base_(decimalValue(config.lr)), cosineSteps_(1) {
  validateOptimizerConfig(config);
  DTLAB_ENFORCE(totalSteps >= 0, "LrSchedule: negative totalSteps ", totalSteps);
  if (config.scaleLrBaseBatch) {
    if (globalBatch < 1)
      throw SpecError(
          "training.batch_size",
          detail::concat("must be >= 1 for the linear scaling rule, got ", globalBatch));
    base_ =
        base_ * static_cast<double>(globalBatch) / static_cast<double>(*config.scaleLrBaseBatch);
  }
  cosineSteps_ = totalSteps > 0 ? std::max<int64_t>(1, totalSteps - schedule_.warmupSteps)
                                : std::max<int64_t>(1, schedule_.stepSize);
}

float LrSchedule::at(int64_t step) const {
  DTLAB_ENFORCE(step >= 1, "LrSchedule: step counts from 1, got ", step);
  const int64_t warmup = schedule_.warmupSteps;
  if (step <= warmup)
    return static_cast<float>(base_ * static_cast<double>(step) / static_cast<double>(warmup));

  const int64_t e = step - warmup - 1;
  switch (schedule_.kind) {
    case ScheduleKind::kConstant:
      return static_cast<float>(base_);
    case ScheduleKind::kStep: {
      const int64_t decays = e / schedule_.stepSize;
      return static_cast<float>(
          base_ * std::pow(decimalValue(schedule_.gamma), static_cast<double>(decays)));
    }
    case ScheduleKind::kCosine: {
      const double minLr = decimalValue(schedule_.minLr);
      if (e >= cosineSteps_ - 1) return static_cast<float>(minLr);
      const double phase =
          std::numbers::pi * static_cast<double>(e) / static_cast<double>(cosineSteps_ - 1);
      return static_cast<float>(minLr + (base_ - minLr) * (1.0 + std::cos(phase)) / 2.0);
    }
  }
  return static_cast<float>(base_);
}

}  // namespace dtlab::core
