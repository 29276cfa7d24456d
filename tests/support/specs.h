#pragma once
// The specs tests train, stated by what differs from one small problem, and variants written as a
// user writes them (JSON), read by the spec's own parser: a setting the strategy does not have,
// or a value out of its range, fails the test where it is built, as it would fail a user's spec.
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/common/check.h"
#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"

namespace dtlab::core::test {

// The small problem the strategy tests train: Gaussian blobs (4096 training samples, 16
// features, 4 classes), a 32-32 MLP, SGD with momentum, a global batch of 64, `steps` steps,
// evaluated every `evalInterval`, on the default strategy.
inline ExperimentSpec smallBlobsSpec(int64_t steps, int64_t evalInterval) {
  ExperimentSpec spec;
  spec.seed = 11;
  spec.dataset.kind = "gaussian_blobs";
  spec.dataset.trainSize = 4096;
  spec.dataset.testSize = 512;
  spec.dataset.features = 16;
  spec.dataset.classes = 4;
  spec.dataset.seed = 11;
  spec.model.hidden = {32, 32};
  spec.optimizer.kind = OptimizerKind::kSgd;
  spec.optimizer.lr = 0.05f;
  spec.optimizer.momentum = 0.9f;
  spec.training.batchSize = 64;
  spec.training.epochs = 0;
  spec.training.maxSteps = steps;
  spec.training.evalInterval = evalInterval;
  return spec;
}

// The SpecError the parser gives for `spec`, or nothing when it accepts it.
inline std::optional<SpecError> specErrorOf(const nlohmann::json& spec) {
  try {
    parseExperimentSpec(spec);
  } catch (const SpecError& e) {
    return e;
  }
  return std::nullopt;
}

// A variant as a spec's "variants" entry gives it ({"strategy": "local_sgd", "period": 8}),
// parsed for a cluster of `nodes`: its name the strategy's unless given, every other setting at
// its default. Throws SpecError naming the setting for one the strategy refuses.
inline VariantConfig variant(const nlohmann::json& entry, int64_t nodes = 2) {
  return parseExperimentSpec(
             {{"cluster", {{"local_nodes", nodes}}}, {"variants", nlohmann::json::array({entry})}})
      .variants.at(0);
}

// `spec` running the one variant `entry` describes.
inline ExperimentSpec withVariant(ExperimentSpec spec, const nlohmann::json& entry,
                                  int64_t nodes = 2) {
  spec.variants = {variant(entry, nodes)};
  return spec;
}

}  // namespace dtlab::core::test
