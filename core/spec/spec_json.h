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
// Complete JSON with every default filled in; parseExperimentSpec(toJson(s)) == s.
nlohmann::json toJson(const ExperimentSpec& spec);
// One cluster.nodes entry, as toJson(spec) writes it.
nlohmann::json toJson(const NodeConfig& node);

}  // namespace dtlab::core
