#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <QtCore/QMetaType>

#include "core/metrics/metric_table.h"
#include "core/metrics/metrics.h"
#include "core/store/project_store.h"

namespace dtlab::ui {

// The x-axis of a comparison: the training step, or wall-clock seconds since the run began.
enum class ChartX { kStep, kWallSeconds };
const char* toString(ChartX x);                       // "step", "wall"
std::optional<ChartX> parseChartX(std::string_view);  // "step" or "wall"

// How the several series of a worker- or node-scope metric become one curve per run.
enum class MemberReduction {
  kMean,   // the mean over the run's workers of each step (over its nodes: of each sample)
  kFirst,  // worker 0 (node 0) alone
};

// Runs drawn together as one curve: a variant's repetitions in an execution.
struct RunGroup {
  std::string label;  // the legend's name for the group, e.g. the variant's strategy
  std::vector<int64_t> runIds;
};

// What to compare: one metric of the metric table, for several runs of one project.
struct ComparisonRequest {
  std::string metric;
  std::vector<int64_t> runIds;
  // Empty: one curve per run. Otherwise the chart draws each group as the median of its runs'
  // curves with their range as a band (ui/charts/curve_bands.h). readComparison still reads
  // one series per run of runIds, so every grouped run must be listed there too.
  std::vector<RunGroup> groups;
  ChartX x = ChartX::kStep;
  MemberReduction reduction = MemberReduction::kMean;
  // Per series read from the store: a series with more than 2 x buckets points in range is
  // reduced to each bucket's minimum and maximum point (core/store/series_query.h).
  int buckets = 1000;
};

// One run's curve, in the metric table's unit, x in steps or seconds.
struct ComparisonSeries {
  int64_t runId = 0;
  std::string runName;
  std::string strategy;
  core::RunStatus status = core::RunStatus::kUnknown;
  int members = 0;  // series behind the curve: workers or nodes averaged, else 0 or 1
  std::vector<double> x;
  std::vector<double> values;
  bool downsampled = false;  // the store reduced at least one of its series
};

struct ComparisonData {
  ComparisonRequest request;
  std::vector<ComparisonSeries> series;  // in the order of request.runIds
};

// The row of the metric table named `name`; throws dtlab::Error naming the valid metrics.
const core::MetricInfo& requireMetric(std::string_view name);
// "loss, samples_per_s, ...": every metric of the table, for messages.
std::string metricNames();

// Reads the curves through its own read-only connection (call it off the GUI thread).
// Worker- and node-scope metrics are reduced as `request.reduction` says: the mean at each
// step over the workers that recorded that step, or over the nodes' k-th samples (in
// wall-time mode the point sits at the latest of their wall times); when the store
// downsampled any member, the members are read over one range in the same buckets and
// each bucket's minimum and maximum are averaged over the members instead. Throws
// core::StoreError (unreadable file, unknown run) or dtlab::Error (unknown metric).
ComparisonData readComparison(core::ProjectStore& store, const ComparisonRequest& request);

}  // namespace dtlab::ui

Q_DECLARE_METATYPE(dtlab::ui::ComparisonData)
