// dtlab-cli bench strategies: every example comparison of resources/specs run as a user runs
// it (`dtlab-cli run SPEC --repeats R --quiet --project P`, a child process each), then the
// statistics of each execution and the claims, each with the figure that meets it or
// not, through the machinery `dtlab-cli compare` uses.
#include "remote/bench/bench_strategies.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/analysis/comparison.h"
#include "core/analysis/comparison_output.h"
#include "core/analysis/comparison_statistics.h"
#include "core/common/program_path.h"
#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "core/store/project_store.h"
#include "remote/bench/bench_common.h"

namespace dtlab::bench {
namespace {

// The comparisons and what the issue claims for them.
constexpr const char* kSpecs[] = {"hetero_2node", "hetero_3node",         "hetero_4node",
                                  "drift",        "modes_straggler",      "noniid",
                                  "compression",  "image_classification", "language_model"};

std::string number(const std::optional<double>& v, int digits) {
  if (!v) return "–";
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", digits, *v);
  return text;
}

std::string shortNumber(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2g", v);
  return text;
}

// A claim of the issue: a ratio of two variants' figures (variant / baseline, paired by
// repetition), or, without a baseline, a figure of one variant.
struct ClaimRule {
  const char* comparison;
  const char* text;
  const char* variant;
  const char* baseline;  // nullptr: the variant's own figure
  const char* figure;    // a comparison column's key, or kLowestUtilization
  double atLeast;
};

// The lowest of a run's per-worker utilisations (the summary's "utilization" array).
constexpr const char* kLowestUtilization = "lowest_worker_utilization";

constexpr ClaimRule kClaims[] = {
    // Both follow the same trajectory (share-weighted gradients equal the equal split's, up to
    // summation order), so the samples/s ratio is the speed-up of every step; the time to a
    // target on a flat stretch of the curve also moves with where rounding lets it cross.
    {"hetero_2node", "speed_proportional reaches the target sooner than equal (x)", "equal",
     "speed_proportional", "time_to_target_s", 2.2},
    // Adding the slow node pays at all (the ideal for speeds 1 and 0.25 is 1.25x).
    {"hetero_2node", "speed_proportional reaches the target sooner than one_node (x)", "one_node",
     "speed_proportional", "time_to_target_s", 1.0},
    {"hetero_2node", "speed_proportional samples/s over equal's (x)", "speed_proportional", "equal",
     "samples_per_s", 2.0},
    {"hetero_2node", "speed_proportional's lowest worker utilisation", "speed_proportional",
     nullptr, kLowestUtilization, 0.85},
    // Three nodes whose all-reduce takes about as long as their compute: the step's speed-up.
    {"hetero_3node", "speed_proportional samples/s over equal's (x)", "speed_proportional", "equal",
     "samples_per_s", 1.25},
    {"drift", "speed_proportional reaches the target sooner than equal (x)", "equal",
     "speed_proportional", "time_to_target_s", 1.5},
    {"drift", "speed_proportional samples/s over equal's (x)", "speed_proportional", "equal",
     "samples_per_s", 1.5},
    {"modes_straggler", "async_ps samples/s over sync_allreduce's (x)", "async_ps",
     "sync_allreduce", "samples_per_s", 1.5},
    // On a 200 Mbit/s link: 1% of the values as (index, value) pairs that 3 peers gather, and
    // rank-2 factors of each matrix, against float32 all-reduces.
    {"compression", "topk (1%) sends fewer bytes per sample than none (x)", "none", "topk",
     "bytes_per_sample", 20.0},
    {"compression", "powersgd (rank 2) sends fewer bytes per sample than none (x)", "none",
     "powersgd", "bytes_per_sample", 20.0},
    {"compression", "powersgd reaches the target sooner than none (x)", "none", "powersgd",
     "time_to_target_s", 1.0},
    {"compression", "topk reaches the target sooner than none (x)", "none", "topk",
     "time_to_target_s", 1.0},
    // The cnn on shapes with a node at a third of the others' speed: the asynchronous server
    // keeps the three fast nodes busy. Local SGD averages every 8 steps, so it sends an eighth
    // of the bytes, but each of its rounds still waits for the slow node's 8 steps: it is not a
    // cure for a steady straggler (its time to target was 0.96x sync's, not significant).
    {"image_classification", "async_ps samples/s over sync_allreduce's (x)", "async_ps",
     "sync_allreduce", "samples_per_s", 1.3},
    {"image_classification", "local_sgd sends fewer bytes per sample than sync_allreduce (x)",
     "sync_allreduce", "local_sgd", "bytes_per_sample", 6.0},
    // The transformer on the bigram language with the same straggler: the server keeps the
    // fast nodes busy (more samples a second), but its stale updates cost more samples than
    // that gains, so the synchronous run reaches the target first; the hybrid, synchronous for
    // the first tenth, lies between.
    {"language_model", "async_ps samples/s over sync_allreduce's (x)", "async_ps", "sync_allreduce",
     "samples_per_s", 1.15},
    {"language_model", "sync_allreduce reaches the target sooner than async_ps (x)", "async_ps",
     "sync_allreduce", "time_to_target_s", 1.0},
};

bool hasVariant(const core::Comparison& c, const std::string& name) {
  return std::any_of(c.rows.begin(), c.rows.end(),
                     [&](const core::ComparisonRow& r) { return r.variant == name; });
}

// A ratio claim from the statistics of the execution: their ratio of medians and paired test,
// and each repetition's own ratio.
void measureRatio(const ClaimRule& rule, const core::ComparisonStatistics& stats,
                  StrategyClaim& claim) {
  for (const core::RatioStatistics& r : stats.ratios) {
    if (r.variant != rule.variant || r.baseline != rule.baseline ||
        std::string(r.column->key) != rule.figure || r.ratio.n == 0)
      continue;
    claim.measured = r.ratio;
    claim.test = r.test;
    claim.holds = r.holds;
    claim.repetitions = r.repetitionRatios;
  }
}

// A figure of one variant's runs, from their summaries (in repetition order).
void measureFigure(const ClaimRule& rule, const nlohmann::json& summaries,
                   const core::BootstrapOptions& bootstrap, StrategyClaim& claim) {
  std::map<int64_t, double> byRepetition;
  for (const nlohmann::json& s : summaries) {
    if (s.value("name", "") != rule.variant || !s.contains("utilization") ||
        !s["utilization"].is_array() || s["utilization"].empty())
      continue;
    double least = 1.0;
    for (const nlohmann::json& u : s["utilization"]) least = std::min(least, u.get<double>());
    byRepetition[s.value("repetition", int64_t{0})] = least;
  }
  for (const auto& [repetition, value] : byRepetition) claim.repetitions.push_back(value);
  if (!claim.repetitions.empty())
    claim.measured = core::bootstrapMedian(claim.repetitions, bootstrap);
}

}  // namespace

std::vector<std::string> strategyComparisons() {
  return {std::begin(kSpecs), std::end(kSpecs)};
}

StrategiesBenchResult runStrategiesBench(const StrategiesBenchOptions& options) {
  const std::vector<std::string> names =
      options.only.empty() ? strategyComparisons() : options.only;
  StrategiesBenchResult result;
  result.repetitions = options.repetitions;
  result.project = options.project;
  result.runs = nlohmann::json::object();
  result.statistics = nlohmann::json::object();
  for (const std::string& name : names) {
    const std::string path = options.specsDir + "/" + name + ".json";
    const core::ExperimentSpec spec = core::loadExperimentSpec(path);  // errors name the file
    std::cerr << "bench strategies: " << name << " (" << spec.variants.size() << " variants x "
              << options.repetitions << ")" << std::endl;
    const nlohmann::json summaries =
        runSpecThroughCli(path, options.repetitions, options.project)["runs"];
    result.runs[name] = summaries;

    // The execution just recorded, as `dtlab-cli compare P NAME` reads it; the pairs the
    // claims ask about.
    const std::unique_ptr<core::ProjectStore> store =
        core::ProjectStore::open(options.project, /*readOnly=*/true);
    const core::Comparison comparison = core::compareExperiment(*store, spec.name);
    core::StatisticsOptions statisticsOptions;
    std::vector<const ClaimRule*> rules;
    for (const ClaimRule& rule : kClaims) {
      if (name != rule.comparison) continue;
      rules.push_back(&rule);
      if (rule.baseline == nullptr || !hasVariant(comparison, rule.variant) ||
          !hasVariant(comparison, rule.baseline))
        continue;  // a spec without the variants: the claim says it was not measured
      const std::pair<std::string, std::string> pair(rule.variant, rule.baseline);
      std::vector<std::pair<std::string, std::string>>& pairs = statisticsOptions.pairs;
      if (std::find(pairs.begin(), pairs.end(), pair) == pairs.end()) pairs.push_back(pair);
    }
    const core::ComparisonStatistics stats =
        core::comparisonStatistics(comparison, statisticsOptions);
    result.statistics[name] = core::statisticsJson(stats);
    const core::StatisticsTable table = core::variantStatisticsTable(stats);
    result.table += "### " + name + "\n\n" + table.caption + ":\n\n" +
                    core::markdownStatisticsTable(table) + "\n";

    for (const ClaimRule* rule : rules) {
      StrategyClaim claim;
      claim.text = name + ": " + rule->text;
      claim.threshold = rule->atLeast;
      if (rule->baseline != nullptr)
        measureRatio(*rule, stats, claim);
      else
        measureFigure(*rule, summaries, stats.bootstrap, claim);
      result.claims.push_back(std::move(claim));
    }
  }
  result.machine = machineDescription();
  return result;
}

nlohmann::json toJson(const StrategiesBenchResult& result) {
  nlohmann::json out = {{"bench", "strategies"},
                        {"machine", result.machine},
                        {"repetitions", result.repetitions},
                        {"runs", result.runs},
                        {"statistics", result.statistics},
                        {"claims", nlohmann::json::array()}};
  const auto orNull = [](bool has, double v) { return has ? nlohmann::json(v) : nullptr; };
  for (const StrategyClaim& c : result.claims) {
    const bool has = c.measured.has_value();
    const bool tested = c.test && std::isfinite(c.test->pValue);
    out["claims"].push_back({{"claim", c.text},
                             {"measured", orNull(has, has ? c.measured->estimate : 0)},
                             {"low", orNull(has, has ? c.measured->low : 0)},
                             {"high", orNull(has, has ? c.measured->high : 0)},
                             {"n", has ? c.measured->n : 0},
                             {"repetitions", c.repetitions},
                             {"p_value", orNull(tested, tested ? c.test->pValue : 0)},
                             {"holds", c.holds},
                             {"at_least", c.threshold},
                             {"met", c.met()},
                             {"met_throughout", c.metThroughout()}});
  }
  return out;
}

void writeReport(const StrategiesBenchResult& result, std::ostream& out) {
  out << "Measured " << utcNow() << " by `dtlab-cli bench strategies --reps " << result.repetitions
      << "`; " << result.machine << "; project " << result.project
      << " (one execution per comparison: `dtlab-cli compare " << result.project << " NAME`).\n\n"
      << result.table;
  for (const StrategyClaim& c : result.claims) {
    out << "- " << c.text << ": ";
    if (!c.measured) {
      out << "not measured (claim: at least " << number(c.threshold, 2) << ") NOT met\n";
      continue;
    }
    const core::Interval& m = *c.measured;
    out << number(m.estimate, 2);
    if (m.n > 1) out << " [" << number(m.low, 2) << ", " << number(m.high, 2) << "]";
    out << " ("
        << (m.n == 1 ? std::string("one repetition") : std::to_string(m.n) + " repetitions:");
    if (m.n > 1)
      for (double v : c.repetitions) out << " " << number(v, 2);
    if (c.test && std::isfinite(c.test->pValue))
      out << "; paired t-test p = " << shortNumber(c.test->pValue) << ", "
          << (c.holds ? "holds" : "does not hold");
    out << "; claim: at least " << number(c.threshold, 2) << ") " << (c.met() ? "met" : "NOT met");
    if (m.n > 1) out << "; the whole interval above it: " << (c.metThroughout() ? "yes" : "no");
    out << "\n";
  }
}

}  // namespace dtlab::bench
