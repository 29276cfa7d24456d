#include "app/compare_command.h"

#include <iostream>
#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

#include "app/args.h"
#include "core/analysis/comparison.h"
#include "core/analysis/comparison_output.h"
#include "core/analysis/comparison_statistics.h"
#include "core/analysis/run_calibration.h"
#include "core/analysis/seed_table.h"
#include "core/store/project_store.h"

namespace dtlab::app {

std::string comparisonFormat(const std::string& format) {
  if (format != "table" && format != "csv" && format != "json")
    throw UsageError("--format: expected table, csv or json, got '" + format + "'");
  return format;
}

// The yardstick of the comparison's runs (core/analysis/run_calibration.h); none without a
// calibration of the experiment. A damaged calibration: `why` says so.
struct YardstickOutcome {
  std::optional<core::ComparisonYardstick> yardstick;
  std::string why;
};

YardstickOutcome yardstickOf(core::ProjectStore& store, const core::Comparison& comparison) {
  try {
    return {core::comparisonYardstick(store, comparison), {}};
  } catch (const Error& e) {
    return {std::nullopt, e.what()};
  }
}

nlohmann::json yardstickJson(const YardstickOutcome& outcome) {
  if (!outcome.yardstick) return nullptr;
  nlohmann::json rows = nlohmann::json::array();
  const auto optional = [](const std::optional<double>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  for (const core::Yardstick& y : outcome.yardstick->runs)
    rows.push_back({{"run", y.runId},
                    {"variant", y.variant},
                    {"nodes", y.nodes},
                    {"measured_step_ms", y.measuredMs},
                    {"as_ran_step_ms", optional(y.asRanMs)},
                    {"ideal_step_ms", optional(y.idealMs)},
                    {"why", y.why}});
  return {{"calibration", outcome.yardstick->calibrationId}, {"runs", rows}};
}

int compareCommand(const std::vector<std::string>& argv) {
  const Args args(argv, {"--format", "--execution", "--pair"}, {"--seed-table"});
  if (args.positionals().empty() || args.positionals().size() > 2)
    throw UsageError("expected P.dtlab [EXPERIMENT]");
  // Checked before the file is opened, so that a typo is a usage error whatever the file.
  const std::string format = comparisonFormat(args.value("--format", "table"));
  if (args.has("--seed-table") && format == "csv")
    throw UsageError("--seed-table: --format table or json (a cell is text with its tooltip)");
  std::optional<std::string> experiment;
  if (args.positionals().size() == 2) experiment = args.positionals()[1];
  std::optional<int64_t> execution;
  if (args.has("--execution"))
    execution = args.integer("--execution", 0, 1, std::numeric_limits<int64_t>::max());
  auto store = core::ProjectStore::open(args.positionals()[0]);
  core::Comparison comparison = core::compareExperiment(*store, experiment, execution);
  for (const std::string& pair : args.values("--pair")) {
    try {
      comparison.pairs.push_back(core::parseVariantPair(comparison, pair));
    } catch (const Error& e) {
      throw UsageError(e.what());
    }
  }
  if (args.has("--seed-table")) {
    const core::StatisticsTable table =
        core::seedTable(comparison, core::comparisonStatistics(comparison));
    if (format == "json")
      std::cout << core::statisticsTableJson(table).dump() << "\n";
    else
      std::cout << core::seedTableText(comparison);
  } else if (format == "json") {
    nlohmann::json json = core::comparisonJson(comparison);
    json["yardstick"] = yardstickJson(yardstickOf(*store, comparison));
    std::cout << json.dump() << "\n";
  } else if (format == "csv")
    std::cout << core::comparisonCsv(comparison);
  else {
    std::cout << core::comparisonTable(comparison);
    const YardstickOutcome yardstick = yardstickOf(*store, comparison);
    if (!yardstick.why.empty()) std::cout << "\nno yardstick: " << yardstick.why << "\n";
    if (yardstick.yardstick)
      std::cout << "\nyardstick:\n"
                << core::formatStatisticsTable(core::yardstickTable(*yardstick.yardstick), true);
  }
  std::cout.flush();
  return std::cout ? 0 : 1;
}

}  // namespace dtlab::app
