#pragma once
// A comparison as `dtlab-cli run` and `compare` print it and export it: with repetitions, the
// statistics over them (comparison_statistics.h) and the seed table (seed_table.h) on top of
// the rows (comparison.h).
#include <string>

#include <nlohmann/json.hpp>

#include "core/analysis/comparison.h"

namespace dtlab::core {

// The rows' table (comparisonRowsTable), or with repetitions a row per variant with medians
// and intervals, then the ratios.
std::string comparisonTable(const Comparison& comparison);
// comparisonTable's form for repetitions (whatever the comparison holds).
std::string repeatedComparisonTable(const Comparison& comparison);
// The heading and the measured seed table (core/analysis/seed_table.h) of the comparison.
std::string seedTableText(const Comparison& comparison);
// comparisonRowsJson, with repetitions also "statistics" (statisticsJson).
nlohmann::json comparisonJson(const Comparison& comparison);

}  // namespace dtlab::core
