#include "app/compare_command.h"

#include <iostream>
#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

#include "app/args.h"
#include "core/store/comparison.h"
#include "core/store/comparison_statistics.h"
#include "core/store/project_store.h"
#include "core/store/seed_table.h"

namespace dtlab::app {

std::string comparisonFormat(const std::string& format) {
  if (format != "table" && format != "csv" && format != "json")
    throw UsageError("--format: expected table, csv or json, got '" + format + "'");
  return format;
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
  } else if (format == "json")
    std::cout << core::comparisonJson(comparison).dump() << "\n";
  else if (format == "csv")
    std::cout << core::comparisonCsv(comparison);
  else
    std::cout << core::comparisonTable(comparison);
  std::cout.flush();
  return std::cout ? 0 : 1;
}

}  // namespace dtlab::app
