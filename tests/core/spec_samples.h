#pragma once
// Valid experiment specs that exercise every kind, every enum value and awkward numbers: the
// spec tests round-trip them and the fuzz test mutates them.
#include <vector>

#include "core/spec/experiment_spec.h"

namespace dtlab::core::test {

inline std::vector<ExperimentSpec> variedSpecs() {
  std::vector<ExperimentSpec> specs;
  ExperimentSpec base;
  base.dataset.seed = base.seed;
  specs.push_back(base);

  ExperimentSpec spirals = base;
  spirals.name = "spirals \xC3\xA9\xE2\x9C\x93";  // UTF-8 survives the trip
  spirals.seed = std::numeric_limits<uint64_t>::max();
  spirals.dataset.kind = "two_spirals";
  spirals.dataset.classes = 3;
  spirals.dataset.features = 2;
  spirals.dataset.parameters.set("turns", 2.25);
  spirals.dataset.parameters.set("noise", 0.2);
  spirals.dataset.seed = 0;
  spirals.model.activation = Activation::kGELU;
  spirals.optimizer.nesterov = true;
  spirals.optimizer.lr = std::nextafter(0.1f, 1.0f);
  specs.push_back(spirals);

  ExperimentSpec checkerboard = base;
  checkerboard.dataset.kind = "checkerboard";
  checkerboard.dataset.classes = 2;
  checkerboard.dataset.features = 2;
  checkerboard.dataset.parameters.set("grid_size", int64_t{6});
  checkerboard.optimizer.schedule.kind = ScheduleKind::kStep;
  checkerboard.optimizer.schedule.stepSize = 300;
  checkerboard.optimizer.schedule.gamma = 0.5f;
  checkerboard.optimizer.schedule.warmupSteps = 10;
  specs.push_back(checkerboard);

  ExperimentSpec teacher = base;
  teacher.dataset.kind = "teacher";
  teacher.dataset.classes = 5;
  teacher.dataset.features = 20;
  teacher.dataset.parameters.set("teacher_width", int64_t{32});
  teacher.dataset.parameters.set("teacher_depth", int64_t{0});
  teacher.dataset.parameters.set("label_noise", 0.1);
  teacher.model.hidden = {};
  teacher.model.activation = Activation::kTanh;
  teacher.model.init = InitScheme::kXavier;
  teacher.training.targetAccuracy = 0.9;
  teacher.training.threads = 256;
  specs.push_back(teacher);

  ExperimentSpec regression = base;
  regression.dataset.kind = "linear_regression";
  regression.dataset.classes = 1;
  regression.dataset.features = 8;
  regression.dataset.parameters.set("noise", 0.05);
  regression.model.loss = LossKind::kMse;
  regression.model.hidden = {4096};
  regression.optimizer.kind = OptimizerKind::kAdam;
  regression.optimizer.lr = 1e-3f;
  regression.optimizer.weightDecay = 1e-4f;
  regression.optimizer.beta1 = 0.8f;
  regression.optimizer.beta2 = 0.95f;
  regression.optimizer.eps = 1e-7f;
  regression.optimizer.scaleLrBaseBatch = 256;
  regression.training.epochs = 0;
  regression.training.maxSeconds = 12.345;
  specs.push_back(regression);

  ExperimentSpec shapes = base;
  shapes.dataset.kind = "shapes";
  shapes.dataset.classes = 10;
  shapes.dataset.features = 784;
  shapes.dataset.trainSize = 60000;
  shapes.dataset.testSize = 10000;
  shapes.dataset.parameters.set("noise", 0.3);
  shapes.model.hidden = {256, 128, 64};
  shapes.optimizer.kind = OptimizerKind::kAdamW;
  shapes.optimizer.lr = 3e-4f;
  shapes.optimizer.weightDecay = 0.01f;
  shapes.optimizer.schedule.kind = ScheduleKind::kCosine;
  shapes.optimizer.schedule.minLr = 1e-6f;
  shapes.training.batchSize = 60000;
  shapes.training.maxSteps = 1;
  specs.push_back(shapes);

  ExperimentSpec adadelta = base;
  adadelta.optimizer.kind = OptimizerKind::kAdadelta;
  adadelta.optimizer.lr = 1.0f;
  adadelta.optimizer.eps = 1e-6f;
  adadelta.optimizer.rho = 0.95f;
  adadelta.optimizer.schedule.kind = ScheduleKind::kCosine;
  adadelta.optimizer.schedule.minLr = 0.001f;
  adadelta.optimizer.schedule.stepSize = 5000;  // cosine length for a time-limited run
  adadelta.training.maxSeconds = 1e-3;
  adadelta.training.targetAccuracy = 1.0 / 3.0;
  specs.push_back(adadelta);
  return specs;
}

// Values that mutations put into a spec: every JSON type, edges of every range, every enum
// name, and things JSON text cannot express but a programmatic document can (NaN, infinity).

}  // namespace dtlab::core::test
