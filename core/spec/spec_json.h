#pragma once
// A spec as JSON: parsing with validation and writing. Validation asks the registries (dataset
// kinds, strategies), so this sits above them; the spec's types (experiment_spec.h) sit below
// everything that reads them.
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/spec/experiment_spec.h"

namespace dtlab::core {

// Parses and validates. Throws SpecError naming the field for an unknown field, a
// wrong type, a value out of range, or a combination that cannot work.
ExperimentSpec parseExperimentSpec(const nlohmann::json& json);
ExperimentSpec parseExperimentSpecText(const std::string& text);  // also reports JSON syntax errors
ExperimentSpec loadExperimentSpec(const std::string& path);       // names the file in errors
// A spec's "dataset" object alone, read as parseExperimentSpec reads it (errors name paths
// under "dataset"; `specSeed` stands for the spec's seed), and written back complete: for an
// editor of a dataset that no model has been chosen for (a model kind may refuse some
// datasets, as mlp refuses next-token sequences).
DatasetConfig parseDatasetSection(const nlohmann::json& dataset, uint64_t specSeed);
nlohmann::json toJson(const DatasetConfig& dataset);
// Complete JSON with every default filled in; sameExperiment(parseExperimentSpec(toJson(s)), s).
nlohmann::json toJson(const ExperimentSpec& spec);
// One cluster.nodes entry, as toJson(spec) writes it.
nlohmann::json toJson(const NodeConfig& node);

// The spec as DTLab reads it: the dataset, model and every variant in their canonical forms
// (core/data/dataset_kinds.h, core/nn/model_kinds.h, core/train/strategy_registry.h), so that a
// spec built in code and the one the parser completes from it compare equal.
ExperimentSpec canonicalSpec(const ExperimentSpec& spec);
// Whether two specs run the same experiment: their canonical forms are equal.
bool sameExperiment(const ExperimentSpec& a, const ExperimentSpec& b);

}  // namespace dtlab::core
