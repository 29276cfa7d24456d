#pragma once

#include <string>
#include <vector>

#include "core/spec/experiment_spec.h"

namespace dtlab::core {

// An experiment spec in words, for the experiment report (core/analysis/experiment_report.h) and
// anyone who shows a spec to a reader rather than to a parser: one fact per aspect, in the
// order a reader needs them (dataset, model, training, cluster, then a fact per variant).
// Settings and dataset parameters are read through their descriptors' schemas, so a new
// strategy or dataset kind is described without changing this.
struct SpecFact {
  std::string label;  // "Dataset", "Model", "Training", "Cluster", "Variant"
  std::string text;   // one sentence or a short paragraph; no markup
};

std::vector<SpecFact> describeSpec(const ExperimentSpec& spec);

}  // namespace dtlab::core
