#include "core/analysis/comparison_statistics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

#include "core/common/check.h"
#include "core/common/text_table.h"

namespace dtlab::core {
namespace {

// The rows of one variant, indexed by repetition (a repetition recorded twice: the later).
struct VariantRows {
  std::string name;
  std::vector<const ComparisonRow*> rows;
  std::map<int64_t, const ComparisonRow*> byRepetition;
};

std::vector<VariantRows> groupByVariant(const Comparison& c) {
  std::vector<VariantRows> out;
  for (const ComparisonRow& row : c.rows) {
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const VariantRows& v) { return v.name == row.variant; });
    if (it == out.end()) {
      out.push_back({row.variant, {}, {}});
      it = out.end() - 1;
    }
    it->rows.push_back(&row);
    it->byRepetition[row.repetition] = &row;
  }
  return out;
}

bool counts(const ComparisonRow& row) {
  return row.hasSummary && row.status == RunStatus::kCompleted;
}

// A seed per figure and pair, so that adding a column or a variant does not move the
// intervals of the others.
BootstrapOptions seeded(const BootstrapOptions& base, std::string_view a, std::string_view b = {}) {
  BootstrapOptions out = base;
  uint64_t h = base.seed;
  for (std::string_view part : {a, b}) {
    for (unsigned char c : part) h = (h ^ c) * 0x100000001B3ull;
    h = (h ^ 0xFF) * 0x100000001B3ull;
  }
  out.seed = h;
  return out;
}

std::optional<double> finite(double v) {
  return std::isfinite(v) ? std::optional(v) : std::nullopt;
}

}  // namespace

const FigureStatistics* VariantStatistics::figure(std::string_view key) const {
  for (const FigureStatistics& f : figures)
    if (f.column->key == key) return &f;
  return nullptr;
}

const VariantStatistics* ComparisonStatistics::variant(std::string_view name) const {
  for (const VariantStatistics& v : variants)
    if (v.variant == name) return &v;
  return nullptr;
}

std::pair<std::string, std::string> parseVariantPair(const Comparison& c, const std::string& text) {
  std::vector<std::string> names;
  for (const VariantRows& v : groupByVariant(c)) names.push_back(v.name);
  const auto known = [&](const std::string& n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  for (std::size_t at = text.find(':'); at != std::string::npos; at = text.find(':', at + 1)) {
    std::string variant = text.substr(0, at);
    std::string baseline = text.substr(at + 1);
    if (known(variant) && known(baseline)) return {variant, baseline};
  }
  std::string listed;
  for (const std::string& n : names) listed += (listed.empty() ? "" : ", ") + n;
  throw Error("--pair '" + text + "': expected VARIANT:BASELINE, two of the variants " + listed);
}

ComparisonStatistics comparisonStatistics(const Comparison& c, const StatisticsOptions& options) {
  ComparisonStatistics out;
  out.bootstrap = options.bootstrap;
  const std::vector<VariantRows> groups = groupByVariant(c);
  for (const VariantRows& group : groups) {
    VariantStatistics v;
    v.variant = group.name;
    v.strategy = group.rows.front()->strategy;
    v.partition = group.rows.front()->partition;
    for (const ComparisonRow* row : group.rows) {
      ++v.runs;
      if (counts(*row)) ++v.completed;
      const std::string outcome = comparisonOutcome(*row);
      auto it = std::find_if(v.outcomes.begin(), v.outcomes.end(),
                             [&](const auto& o) { return o.first == outcome; });
      if (it == v.outcomes.end())
        v.outcomes.emplace_back(outcome, 1);
      else
        ++it->second;
    }
    for (const ComparisonColumn& column : comparisonColumns()) {
      if (!(column.flags & ComparisonColumn::kSummarised)) continue;
      std::vector<double> samples;
      for (const ComparisonRow* row : group.rows)
        if (counts(*row))
          if (std::optional<double> x = column.numberOf(*row)) samples.push_back(*x);
      if (samples.empty()) continue;
      v.figures.push_back(
          {&column, bootstrapMedian(samples, seeded(options.bootstrap, column.key, group.name))});
    }
    out.variants.push_back(std::move(v));
  }

  std::vector<std::pair<std::string, std::string>> pairs =
      options.pairs.empty() ? c.pairs : options.pairs;
  if (pairs.empty())
    for (std::size_t i = 1; i < groups.size(); ++i)
      pairs.emplace_back(groups[i].name, groups.front().name);
  const auto rowsOf = [&](const std::string& name) -> const VariantRows& {
    for (const VariantRows& g : groups)
      if (g.name == name) return g;
    throw Error("no variant '" + name + "' in the comparison of experiment '" + c.experiment + "'");
  };
  for (const auto& [variantName, baselineName] : pairs) {
    const VariantRows& variant = rowsOf(variantName);
    const VariantRows& baseline = rowsOf(baselineName);
    for (const ComparisonColumn& column : comparisonColumns()) {
      if (!(column.flags & ComparisonColumn::kRatio)) continue;
      // Paired by repetition: both runs completed, both figures measured and positive.
      std::vector<double> a;
      std::vector<double> b;
      for (const auto& [repetition, row] : variant.byRepetition) {
        const auto other = baseline.byRepetition.find(repetition);
        if (other == baseline.byRepetition.end() || !counts(*row) || !counts(*other->second))
          continue;
        const std::optional<double> x = column.numberOf(*row);
        const std::optional<double> y = column.numberOf(*other->second);
        if (!x || !y || *x <= 0.0 || *y <= 0.0) continue;
        a.push_back(*x);
        b.push_back(*y);
      }
      if (a.empty()) continue;
      RatioStatistics r;
      r.variant = variantName;
      r.baseline = baselineName;
      r.column = &column;
      r.ratio = bootstrapRatioOfMedians(
          a, b, seeded(options.bootstrap, column.key, variantName + "\n" + baselineName));
      r.test = pairedLogRatioTest(a, b);
      r.holds = std::isfinite(r.test.pValue) && r.test.pValue < 1.0 - options.bootstrap.level;
      for (std::size_t i = 0; i < a.size(); ++i) r.repetitionRatios.push_back(a[i] / b[i]);
      out.ratios.push_back(std::move(r));
    }
  }
  return out;
}

std::string formatInterval(const ComparisonColumn& column, const Interval& interval) {
  std::string out = formatComparisonFigure(column, interval.estimate);
  // Every repetition measured the same: the interval would only repeat the figure.
  if (interval.n > 1 && interval.low != interval.high)
    out += " [" + formatComparisonFigure(column, interval.low) + ", " +
           formatComparisonFigure(column, interval.high) + "]";
  return out;
}

namespace {

constexpr const char* kMissing = "\u2013";

std::string percent(double level) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g%%", 100.0 * level);
  return text;
}

std::string shortNumber(double v, const char* format) {
  char text[64];
  std::snprintf(text, sizeof(text), format, v);
  return text;
}

// "5 target reached" or "3 target reached; 2 time limit, target not reached".
std::string outcomesText(const VariantStatistics& v) {
  std::string out;
  for (const auto& [outcome, count] : v.outcomes)
    out += (out.empty() ? "" : "; ") + std::to_string(count) + " " + outcome;
  return out;
}

}  // namespace

StatisticsTable variantStatisticsTable(const ComparisonStatistics& stats) {
  StatisticsTable t;
  const std::string level = percent(stats.bootstrap.level);
  t.caption = "medians of the completed runs, [" + level +
              " bootstrap interval over repetitions]; n=K: only K runs have the figure";
  // The measured figures some variant has, in column order; a figure that is 0 in every run
  // (no node lost: no recoveries) is said once in the caption instead of a column of zeros.
  std::vector<const ComparisonColumn*> figures;
  std::string zeros;
  for (const ComparisonColumn& column : comparisonColumns()) {
    if (!(column.flags & ComparisonColumn::kSummarised) || column.title == nullptr) continue;
    bool measured = false;
    bool allZero = true;
    for (const VariantStatistics& v : stats.variants) {
      const FigureStatistics* f = v.figure(column.key);
      if (f == nullptr) continue;
      measured = true;
      allZero = allZero && f->interval.low == 0.0 && f->interval.high == 0.0;
    }
    if (!measured) continue;
    if (allZero && (column.flags & ComparisonColumn::kRatio) == 0) {
      zeros += (zeros.empty() ? "" : ", ") + std::string(column.title);
      continue;
    }
    figures.push_back(&column);
  }
  if (!zeros.empty()) t.caption += "; 0 in every run: " + zeros;
  t.header = {"variant", "strategy", "partition", "completed"};
  t.textColumns = {true, true, true, false};
  for (const ComparisonColumn* f : figures) {
    t.header.push_back(f->title);
    t.textColumns.push_back(false);
  }
  t.header.push_back("outcome");
  t.textColumns.push_back(true);
  for (const VariantStatistics& v : stats.variants) {
    std::vector<std::string> row = {v.variant, v.strategy.empty() ? kMissing : v.strategy,
                                    v.partition.empty() ? kMissing : v.partition,
                                    std::to_string(v.completed) + "/" + std::to_string(v.runs)};
    std::vector<std::string> tips = {"", "", "",
                                     std::to_string(v.completed) + " of its " +
                                         std::to_string(v.runs) +
                                         " runs completed; only completed runs give figures"};
    for (const ComparisonColumn* column : figures) {
      const FigureStatistics* f = v.figure(column->key);
      if (f == nullptr) {
        row.push_back(kMissing);
        tips.push_back("no completed run measured it");
        continue;
      }
      std::string cell = formatInterval(*column, f->interval);
      if (f->interval.n != v.completed) cell += " n=" + std::to_string(f->interval.n);
      row.push_back(cell);
      tips.push_back(f->interval.n == 1
                         ? "one run measured it: no interval"
                         : "median of " + std::to_string(f->interval.n) + " completed runs; " +
                               level + " percentile-bootstrap interval (" +
                               std::to_string(stats.bootstrap.resamples) +
                               " resamples of the repetitions)");
    }
    row.push_back(outcomesText(v));
    tips.push_back("how each of its runs ended");
    t.rows.push_back(std::move(row));
    t.tooltips.push_back(std::move(tips));
  }
  return t;
}

StatisticsTable ratioStatisticsTable(const ComparisonStatistics& stats) {
  StatisticsTable t;
  const std::string level = percent(stats.bootstrap.level);
  const std::string alpha = shortNumber(1.0 - stats.bootstrap.level, "%g");
  t.caption = "ratios of medians, paired by repetition [" + level +
              " paired bootstrap interval]; holds: two-sided paired t-test on the log ratios, "
              "p < " +
              alpha;
  t.header = {"variant", "against", "figure", "ratio", "runs in which it is", "p", ""};
  t.textColumns = {true, true, true, false, true, false, true};
  for (const RatioStatistics& r : stats.ratios) {
    std::string cell = shortNumber(r.ratio.estimate, "%.3f");
    if (r.ratio.n > 1)
      cell +=
          " [" + shortNumber(r.ratio.low, "%.3f") + ", " + shortNumber(r.ratio.high, "%.3f") + "]";
    const std::string direction = "higher in " + std::to_string(r.test.greater) + ", lower in " +
                                  std::to_string(r.test.less) + " of " + std::to_string(r.ratio.n);
    const std::string p =
        std::isfinite(r.test.pValue) ? shortNumber(r.test.pValue, "%.2g") : kMissing;
    const std::string verdict = r.ratio.n < 2 ? "one repetition: no test"
                                : r.holds     ? "holds"
                                              : "does not hold";
    t.rows.push_back({r.variant, r.baseline, r.column->title, cell, direction, p, verdict});
    const std::string pairs = std::to_string(r.ratio.n) + " repetitions in which both completed";
    t.tooltips.push_back(
        {"", "", "",
         "median of " + r.variant + " / median of " + r.baseline + " over " + pairs + "; " + level +
             " percentile bootstrap resampling the repetitions' pairs",
         "pairs in which " + r.variant + "'s figure was higher or lower than " + r.baseline + "'s",
         "two-sided paired Student t-test on log(" + r.variant + " / " + r.baseline + "), " +
             std::to_string(std::max(0, r.ratio.n - 1)) + " degrees of freedom",
         r.holds ? "p < " + alpha + ": the difference holds across repetitions"
                 : "the repetitions do not show a difference at p < " + alpha});
  }
  return t;
}

nlohmann::json statisticsTableJson(const StatisticsTable& table) {
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t r = 0; r < table.rows.size(); ++r) {
    nlohmann::json row = nlohmann::json::array();
    for (std::size_t c = 0; c < table.rows[r].size(); ++c) {
      const std::string how = r < table.tooltips.size() && c < table.tooltips[r].size()
                                  ? table.tooltips[r][c]
                                  : std::string();
      row.push_back({{"text", table.rows[r][c]}, {"how", how}});
    }
    rows.push_back(std::move(row));
  }
  return {{"caption", table.caption}, {"header", table.header}, {"rows", rows}};
}

nlohmann::json statisticsJson(const ComparisonStatistics& s) {
  const auto number = [](double v) {
    const std::optional<double> f = finite(v);
    return f ? nlohmann::json(*f) : nlohmann::json(nullptr);
  };
  nlohmann::json variants = nlohmann::json::array();
  for (const VariantStatistics& v : s.variants) {
    nlohmann::json outcomes = nlohmann::json::object();
    for (const auto& [outcome, count] : v.outcomes) outcomes[outcome] = count;
    nlohmann::json figures = nlohmann::json::object();
    for (const FigureStatistics& f : v.figures)
      figures[f.column->key] = {{"median", number(f.interval.estimate)},
                                {"low", number(f.interval.low)},
                                {"high", number(f.interval.high)},
                                {"n", f.interval.n}};
    variants.push_back({{"variant", v.variant},
                        {"strategy", v.strategy},
                        {"partition", v.partition},
                        {"runs", v.runs},
                        {"completed", v.completed},
                        {"outcomes", outcomes},
                        {"figures", figures}});
  }
  nlohmann::json ratios = nlohmann::json::array();
  for (const RatioStatistics& r : s.ratios)
    ratios.push_back({{"variant", r.variant},
                      {"baseline", r.baseline},
                      {"figure", r.column->key},
                      {"ratio", number(r.ratio.estimate)},
                      {"low", number(r.ratio.low)},
                      {"high", number(r.ratio.high)},
                      {"n", r.ratio.n},
                      {"greater", r.test.greater},
                      {"less", r.test.less},
                      {"t", number(r.test.t)},
                      {"p_value", number(r.test.pValue)},
                      {"holds", r.holds}});
  return {{"level", s.bootstrap.level},
          {"resamples", s.bootstrap.resamples},
          {"method",
           "medians over completed repetitions; percentile bootstrap intervals (ratios: paired "
           "by repetition); holds: two-sided paired t-test on log ratios, p < 1 - level"},
          {"variants", variants},
          {"ratios", ratios}};
}

std::string formatStatisticsTable(const StatisticsTable& table, bool indentCaption) {
  std::vector<std::vector<std::string>> cells = {table.header};
  cells.insert(cells.end(), table.rows.begin(), table.rows.end());
  return (indentCaption ? "  " : "") + table.caption + "\n" +
         alignedLines(cells, table.textColumns);
}

std::string markdownStatisticsTable(const StatisticsTable& table) {
  const auto line = [](const std::vector<std::string>& cells) {
    std::string out = "|";
    for (const std::string& cell : cells) {
      out += ' ';
      for (char ch : cell) out += ch == '|' ? std::string("\\|") : std::string(1, ch);
      out += " |";
    }
    return out + "\n";
  };
  std::string out = line(table.header) + "|";
  for (std::size_t i = 0; i < table.header.size(); ++i)
    out += i < table.textColumns.size() && table.textColumns[i] ? "---|" : "---:|";
  out += "\n";
  for (const std::vector<std::string>& row : table.rows) out += line(row);
  return out;
}

}  // namespace dtlab::core
