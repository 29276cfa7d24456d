#include "app/compare_command.h"

#include <cstdio>
#include <iostream>
#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

#include "app/args.h"
#include "core/store/comparison.h"
#include "core/store/comparison_statistics.h"
#include "core/store/project_store.h"
#include "core/store/run_calibration.h"
#include "core/store/seed_table.h"

namespace dtlab::app {

std::string comparisonFormat(const std::string& format) {
  if (format != "table" && format != "csv" && format != "json")
    throw UsageError("--format: expected table, csv or json, got '" + format + "'");
  return format;
}

// The yardstick of the comparison's runs (core/store/run_calibration.h), with the newest
// calibration of its experiment; none without one. A damaged calibration: `why` says so.
struct YardstickTable {
  std::optional<int64_t> calibrationId;
  std::vector<core::Yardstick> rows;
  std::string why;
};

YardstickTable yardstickOf(core::ProjectStore& store, const core::Comparison& comparison) {
  YardstickTable table;
  std::optional<std::pair<int64_t, core::sim::Calibration>> found;
  try {
    found = core::calibrationOf(store, comparison.experiment);
  } catch (const Error& e) {
    table.why = e.what();
    return table;
  }
  if (!found) return table;
  table.calibrationId = found->first;
  std::vector<int64_t> runs;
  for (const core::ComparisonRow& row : comparison.rows)
    if (row.runId) runs.push_back(*row.runId);
  table.rows = core::yardsticks(store, found->second, runs);
  return table;
}

// Beside each run, the simulator's time per step for it as it ran and for its strategy's ideal.
void printYardstick(const YardstickTable& table) {
  if (!table.why.empty()) std::cout << "\nno yardstick: " << table.why << "\n";
  if (!table.calibrationId) return;
  std::cout << "\nyardstick: the simulator's time per step (calibration " << *table.calibrationId
            << "), for each run as it ran (its batch shares) and for its strategy's ideal\n";
  std::printf("  %-20s %5s %6s %14s %14s %11s\n", "variant", "run", "nodes", "measured (ms)",
              "as it ran (ms)", "ideal (ms)");
  for (const core::Yardstick& y : table.rows) {
    if (!y.asRanMs) {
      std::printf("  %-20s %5lld %6d %14.3f  (%s)\n", y.variant.c_str(),
                  static_cast<long long>(y.runId), y.nodes, y.measuredMs, y.why.c_str());
      continue;
    }
    std::printf("  %-20s %5lld %6d %14.3f %8.3f %+5.0f%% %11.3f\n", y.variant.c_str(),
                static_cast<long long>(y.runId), y.nodes, y.measuredMs, *y.asRanMs,
                y.measuredMs > 0 ? 100.0 * (*y.asRanMs / y.measuredMs - 1.0) : 0.0, *y.idealMs);
  }
}

nlohmann::json yardstickJson(const YardstickTable& table) {
  if (!table.calibrationId) return nullptr;
  nlohmann::json rows = nlohmann::json::array();
  const auto optional = [](const std::optional<double>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  for (const core::Yardstick& y : table.rows)
    rows.push_back({{"run", y.runId},
                    {"variant", y.variant},
                    {"nodes", y.nodes},
                    {"measured_step_ms", y.measuredMs},
                    {"as_ran_step_ms", optional(y.asRanMs)},
                    {"ideal_step_ms", optional(y.idealMs)},
                    {"why", y.why}});
  return {{"calibration", *table.calibrationId}, {"runs", rows}};
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
    printYardstick(yardstickOf(*store, comparison));
  }
  std::cout.flush();
  return std::cout ? 0 : 1;
}

}  // namespace dtlab::app
