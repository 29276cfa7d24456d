#include "core/analysis/experiment_report.h"

#include <algorithm>
#include <ctime>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/analysis/seed_table.h"
#include "core/common/config.h"
#include "core/common/versions.h"
#include "core/metrics/event_facts.h"
#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"

namespace dtlab::core {
namespace {

// The standard charts, in the report's order: loss and test accuracy against wall time and
// steps, throughput, utilisation, staleness, then bytes per sample and time to target as bars.
// A curve is shown when some run of the execution recorded the metric,
// bars when some variant measured the figure.
const ReportChart kCharts[] = {
    {ReportChart::Kind::kCurve, "loss", true, "Training loss against time"},
    {ReportChart::Kind::kCurve, "test_accuracy", true, "Test accuracy against time"},
    {ReportChart::Kind::kCurve, "loss", false, "Training loss against steps"},
    {ReportChart::Kind::kCurve, "test_accuracy", false, "Test accuracy against steps"},
    {ReportChart::Kind::kCurve, "samples_per_s", true, "Throughput"},
    {ReportChart::Kind::kCurve, "utilization", true, "Utilisation (compute share of each step)"},
    {ReportChart::Kind::kCurve, "staleness", false, "Staleness of the gradients applied"},
    {ReportChart::Kind::kBars, "bytes_per_sample", false, "Communication per sample"},
    {ReportChart::Kind::kBars, "time_to_target_s", false, "Time to the target accuracy"},
};

std::string utcFormat(int64_t epochMs, const char* format) {
  const std::time_t seconds = static_cast<std::time_t>(epochMs / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[48];
  std::strftime(text, sizeof text, format, &utc);
  return text;
}

// The spec the execution ran (else the experiment's, for runs before executions), in words.
void describe(ProjectStore& store, ExperimentReport& report) {
  nlohmann::json spec;
  if (report.executionId)
    if (const std::optional<ExecutionRecord> e = store.execution(*report.executionId))
      spec = e->spec;
  if ((spec.is_null() || spec.empty()) && report.comparison.experimentId)
    if (const std::optional<Entity> e =
            store.entity(EntityKind::kExperiment, *report.comparison.experimentId))
      spec = e->config;
  if (spec.is_null() || spec.empty()) {
    report.specNote = "the project kept no spec of this experiment";
    return;
  }
  try {
    report.description = describeSpec(parseExperimentSpec(spec));
  } catch (const std::exception& e) {
    report.specNote =
        std::string("the spec kept with it cannot be read by this version: ") + e.what();
  }
}

bool hasFigure(const ComparisonStatistics& stats, const std::string& key) {
  return std::any_of(stats.variants.begin(), stats.variants.end(),
                     [&](const VariantStatistics& v) { return v.figure(key) != nullptr; });
}

}  // namespace

ExperimentReport experimentReport(ProjectStore& store, const std::optional<std::string>& experiment,
                                  std::optional<int64_t> executionId) {
  ExperimentReport report;
  report.comparison = compareExperiment(store, experiment, executionId);
  const Comparison& c = report.comparison;
  report.project = store.path();
  report.experiment = c.experiment;
  report.executionId = c.executionId;
  report.repeats = c.repeats;
  report.runCount = static_cast<int64_t>(c.rows.size());
  report.statistics = comparisonStatistics(c);
  report.variants = variantStatisticsTable(report.statistics);
  report.ratios = ratioStatisticsTable(report.statistics);
  report.seed = seedTable(c, report.statistics);
  describe(store, report);

  // The runs by variant, and what they recorded, happened and ran on.
  std::set<std::string> recorded;
  std::set<std::string> versions;
  // Node events by what they say after the node's name ("host vm, DTLab 0.1.0, ..."): the
  // names of the nodes that said it (without the address, which a local cluster picks anew).
  std::vector<std::pair<std::string, std::vector<std::string>>> nodes;
  int64_t first = 0, last = 0;
  std::map<std::pair<std::string, std::string>, std::size_t> eventIndex;
  for (const ComparisonRow& row : c.rows) {
    if (!row.runId) continue;
    auto group = std::find_if(report.groups.begin(), report.groups.end(),
                              [&](const ReportGroup& g) { return g.variant == row.variant; });
    if (group == report.groups.end()) group = report.groups.insert(group, {row.variant, {}});
    group->runIds.push_back(*row.runId);
    const std::optional<RunRecord> run = store.run(*row.runId);
    if (!run) continue;
    versions.insert(run->programVersion);
    first = first == 0 ? run->startedMs : std::min(first, run->startedMs);
    last = std::max(last, run->endedMs.value_or(run->startedMs));
    for (const SeriesInfo& s : store.series(run->id)) recorded.insert(s.key);
    std::set<std::string> kindsHere;
    for (const RunEvent& e : store.events(run->id)) {
      if (const std::optional<NodeFacts> node = nodeFactsOf(e)) {
        const std::string name = "node" + std::to_string(node->node);
        const std::string what = node->description();
        auto it = std::find_if(nodes.begin(), nodes.end(),
                               [&](const auto& n) { return n.first == what; });
        if (it == nodes.end()) it = nodes.insert(it, {what, {}});
        if (std::find(it->second.begin(), it->second.end(), name) == it->second.end())
          it->second.push_back(name);
        continue;
      }
      if (describesRun(e.kind)) continue;
      const auto key = std::make_pair(row.variant, e.kind);
      auto it = eventIndex.find(key);
      if (it == eventIndex.end()) {
        it = eventIndex.emplace(key, report.events.size()).first;
        ReportEvents events;
        events.variant = row.variant;
        events.kind = e.kind;
        events.firstRepetition = row.repetition;
        events.first = e;
        report.events.push_back(std::move(events));
      }
      ReportEvents& events = report.events[it->second];
      ++events.count;
      events.last = e;
      events.lastRepetition = row.repetition;
      if (kindsHere.insert(e.kind).second) ++events.runs;
    }
  }
  for (ReportEvents& e : report.events)
    for (const ReportGroup& g : report.groups)
      if (g.variant == e.variant) e.runsOf = static_cast<int64_t>(g.runIds.size());
  // Variants in the comparison's order, then kinds in the order met.
  std::stable_sort(report.events.begin(), report.events.end(),
                   [&](const ReportEvents& a, const ReportEvents& b) {
                     const auto index = [&](const std::string& v) {
                       for (std::size_t i = 0; i < report.groups.size(); ++i)
                         if (report.groups[i].variant == v) return i;
                       return report.groups.size();
                     };
                     return index(a.variant) < index(b.variant);
                   });
  if (first > 0)
    report.when =
        utcFormat(first, "%Y-%m-%d %H:%M") + " to " +
        utcFormat(last, last / 86400000 == first / 86400000 ? "%H:%M" : "%Y-%m-%d %H:%M") + " UTC";

  for (const ReportChart& chart : kCharts) {
    const bool has = chart.kind == ReportChart::Kind::kCurve
                         ? recorded.count(chart.metric) > 0
                         : hasFigure(report.statistics, chart.metric);
    if (has) report.charts.push_back(chart);
  }

  std::string recordedBy;
  for (const std::string& v : versions) recordedBy += (recordedBy.empty() ? "" : ", ") + v;
  report.machine.push_back({"Recorded by", recordedBy.empty() ? "no run recorded" : recordedBy});
  if (nodes.empty())
    report.machine.push_back(
        {"Nodes", "not recorded (runs recorded before DTLab kept each node's description)"});
  for (const auto& [what, names] : nodes)
    report.machine.push_back(
        {names.size() == 1 ? "Node " + names.front() : "Nodes " + listText(names), what});
  std::string libraries;
  for (const std::string& l : libraryVersions()) libraries += (libraries.empty() ? "" : ", ") + l;
  report.machine.push_back(
      {"This report",
       std::string("DTLab ") + DTLAB_VERSION + " (" + libraries + "), written " +
           utcFormat(static_cast<int64_t>(std::time(nullptr)) * 1000, "%Y-%m-%d %H:%M:%S") +
           " UTC"});
  return report;
}

}  // namespace dtlab::core
