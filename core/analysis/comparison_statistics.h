#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/analysis/comparison.h"
#include "core/common/statistics.h"

namespace dtlab::core {

// Statistics over the repetitions of an execution (every variant run `repeats` times): per
// variant, the median of each measured figure with a percentile-bootstrap interval over its
// repetitions; per pair of variants, the ratio of their medians with a paired-bootstrap
// interval (the variants of one repetition share its seed, so they are resampled together)
// and whether the difference holds across repetitions (a two-sided paired t-test on the log
// ratios). Figures come from the runs that completed; a failed, cancelled or interrupted run
// counts among the variant's runs but gives no figure.

struct FigureStatistics {
  const ComparisonColumn* column = nullptr;
  Interval interval;  // interval.n: the completed runs that have the figure
};

struct VariantStatistics {
  std::string variant;
  std::string strategy;
  std::string partition;
  int64_t runs = 0;       // recorded repetitions
  int64_t completed = 0;  // of them, completed
  // The measured figures some completed run has, in column order.
  std::vector<FigureStatistics> figures;
  // How the runs ended (comparisonOutcome) and how often, in the order first met.
  std::vector<std::pair<std::string, int64_t>> outcomes;

  const FigureStatistics* figure(std::string_view key) const;
};

struct RatioStatistics {
  std::string variant;
  std::string baseline;
  const ComparisonColumn* column = nullptr;
  Interval ratio;      // median(variant) / median(baseline); n: repetitions both completed
  PairedTest test;     // on log(variant / baseline), paired by repetition
  bool holds = false;  // test.pValue < 1 - level
  // variant / baseline in each repetition both completed, in repetition order (ratio.n of them)
  std::vector<double> repetitionRatios;
};

struct StatisticsOptions {
  BootstrapOptions bootstrap;
  // (variant, baseline) pairs to compare; empty: the comparison's own pairs (Comparison::pairs),
  // and when it has none, every variant against the first.
  std::vector<std::pair<std::string, std::string>> pairs;
};

struct ComparisonStatistics {
  BootstrapOptions bootstrap;
  std::vector<VariantStatistics> variants;  // in the comparison's order
  std::vector<RatioStatistics> ratios;      // per pair, the columns marked kRatio

  const VariantStatistics* variant(std::string_view name) const;
};

// Throws Error for a pair naming a variant the comparison does not have.
ComparisonStatistics comparisonStatistics(const Comparison& comparison,
                                          const StatisticsOptions& options = {});

// {"level", "resamples", "method", "variants": [{"variant", "strategy", "partition", "runs",
// "completed", "outcomes": {...}, "figures": {KEY: {"median", "low", "high", "n"}}}],
// "ratios": [{"variant", "baseline", "figure", "ratio", "low", "high", "n", "greater",
// "less", "t", "p_value", "holds"}]} (a p-value that cannot be computed is null).
nlohmann::json statisticsJson(const ComparisonStatistics& statistics);

// A pair given as "VARIANT:BASELINE", split where both sides are variants of `comparison`
// (names may hold ':'). Throws Error naming the variants there are.
std::pair<std::string, std::string> parseVariantPair(const Comparison& comparison,
                                                     const std::string& text);

// "median [low, high]" in the column's units ("median" alone for one run).
std::string formatInterval(const ComparisonColumn& column, const Interval& interval);

// The statistics as a table of text, for `dtlab-cli compare`, the GUI and the report alike:
// a caption saying what the figures are, column headings, which columns hold text (the others
// hold figures, aligned right), the cells, and per cell a tooltip saying how it was measured.
struct StatisticsTable {
  std::string caption;
  std::vector<std::string> header;
  std::vector<bool> textColumns;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::vector<std::string>> tooltips;  // parallel to rows; "" where none
};
// A row per variant: how many runs completed, the median [interval] of every figure some
// variant measured ("n=K" when only K of its completed runs have it), how the runs ended.
StatisticsTable variantStatisticsTable(const ComparisonStatistics& statistics);
// A row per ratio: the pair, the figure, the ratio [interval], in how many repetitions the
// variant was higher or lower, the test's p and whether the difference holds.
StatisticsTable ratioStatisticsTable(const ComparisonStatistics& statistics);
// {"caption", "header": [...], "rows": [[{"text", "how"}, ...], ...]}: "how" is the tooltip.
nlohmann::json statisticsTableJson(const StatisticsTable& table);
// The caption (indented by two when asked) and the aligned table, as `dtlab-cli` prints it.
std::string formatStatisticsTable(const StatisticsTable& table, bool indentCaption);
// The table in markdown (a header row, '|' in cells escaped), without the caption.
std::string markdownStatisticsTable(const StatisticsTable& table);

}  // namespace dtlab::core
