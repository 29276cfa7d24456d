#include "core/analysis/comparison_output.h"

#include <algorithm>

#include "core/analysis/comparison_statistics.h"
#include "core/analysis/seed_table.h"

namespace dtlab::core {

std::string repeatedComparisonTable(const Comparison& c) {
  const ComparisonStatistics stats = comparisonStatistics(c);
  int64_t repetitions = c.repeats;
  for (const VariantStatistics& v : stats.variants) repetitions = std::max(repetitions, v.runs);
  std::string out = comparisonHeading(c, stats.variants.size(), repetitions);
  out += formatStatisticsTable(variantStatisticsTable(stats), true);
  if (stats.ratios.empty()) return out;
  return out + formatStatisticsTable(ratioStatisticsTable(stats), false);
}

std::string seedTableText(const Comparison& c) {
  int64_t repetitions = c.repeats;
  const ComparisonStatistics stats = comparisonStatistics(c);
  for (const VariantStatistics& v : stats.variants) repetitions = std::max(repetitions, v.runs);
  return comparisonHeading(c, stats.variants.size(), repetitions) +
         formatStatisticsTable(seedTable(c, stats), true);
}

std::string comparisonTable(const Comparison& c) {
  return hasRepetitions(c) ? repeatedComparisonTable(c) : comparisonRowsTable(c);
}

nlohmann::json comparisonJson(const Comparison& c) {
  nlohmann::json out = comparisonRowsJson(c);
  if (hasRepetitions(c)) out["statistics"] = statisticsJson(comparisonStatistics(c));
  return out;
}

}  // namespace dtlab::core
