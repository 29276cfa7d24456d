#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <QtCore/QStringList>

#include "ui/charts/comparison_data.h"

namespace dtlab::ui {

// The project metadata key that keeps the comparison view as the user left it.
inline constexpr const char* kCompareLayoutKey = "ui.compare_layout";

// What one comparison chart draws of the chosen runs.
struct ChartSettings {
  std::string metric = core::metric::kLoss;  // a name of the metric table
  ChartX x = ChartX::kStep;
  MemberReduction reduction = MemberReduction::kMean;
  double smoothing = 0.6;  // debiased EMA weight in [0, 1); TensorBoard's default

  bool operator==(const ChartSettings&) const = default;
};

// The comparison view as the user left it, kept in the project (kCompareLayoutKey) as JSON:
//
//   {"version": 1,
//    "charts": [{"metric": "loss", "x": "step", "workers": "mean", "smoothing": 0.6}, ...],
//    "current": 0, "runs": [1, 3], "splitter": [220, 600], "chart_splitter": [300, 300],
//    "sort": {"column": "samples_per_s", "order": "descending"}, "execution": 3, "bands": true}
//
// "runs" absent means the default choice (the latest execution, else the latest runs); "sort"
// absent, the run order; "execution": the execution compared (its runs; "runs" is then
// ignored), with its variants as medians and bands unless "bands" is false. The
// sort column is the table's CSV name, so that adding a column does not shift saved sorts.
struct CompareLayout {
  std::vector<ChartSettings> charts{ChartSettings{}};  // never empty
  int current = 0;                                     // the chart the page's controls act on
  std::optional<std::vector<int64_t>> runs;
  std::vector<int> splitter;       // table | charts; empty: fitted to the table
  std::vector<int> chartSplitter;  // one size per chart; empty: equal shares
  std::string sortColumn;          // "" for the run order
  bool sortDescending = false;
  std::optional<int64_t> execution;
  bool bands = true;

  bool operator==(const CompareLayout&) const = default;
};

std::string compareLayoutToJson(const CompareLayout& layout);

// Reads what compareLayoutToJson wrote. Never throws: text that is not a JSON object gives the
// default layout, and an unknown field or a value out of range is skipped; each such problem
// is appended to `problems` in words a user can act on.
CompareLayout parseCompareLayout(const std::string& text, QStringList& problems);

}  // namespace dtlab::ui
