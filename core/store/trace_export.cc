#include "core/store/trace_export.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <unordered_map>

#include "core/common/config.h"
#include "core/store/project_store.h"

namespace dtlab::core {
namespace {

constexpr int kRunPid = 1;
constexpr int kNodePidBase = 100;
constexpr std::array<const char*, 3> kKinds = {"compute", "communication", "wait"};

int tidOf(int worker, int kind) {
  return 1 + 3 * worker + kind;
}

nlohmann::json metadata(const char* name, int pid, int tid, const nlohmann::json& args) {
  return {{"ph", "M"}, {"name", name}, {"pid", pid}, {"tid", tid}, {"args", args}};
}

// The per-step series of one worker, keyed by step.
struct WorkerSeries {
  std::vector<SeriesPoint> steps;  // step_ms, or compute_ms when there is no step_ms
  bool stepsAreCompute = false;
  std::unordered_map<int64_t, double> compute, comm, wait;
  std::vector<SeriesPoint> samplesPerS;
};

std::unordered_map<int64_t, double> byStep(const std::vector<SeriesPoint>& points) {
  std::unordered_map<int64_t, double> out;
  out.reserve(points.size());
  for (const SeriesPoint& p : points) out[p.step] = p.value;
  return out;
}

double lookup(const std::unordered_map<int64_t, double>& m, int64_t step) {
  const auto it = m.find(step);
  return it == m.end() || std::isnan(it->second) ? 0.0 : it->second;
}

// A worker's steps as slices on its three tracks (compute, communication, wait), each phase
// laid out from its step's start and never before the end of the track's previous slice.
void appendStepPhases(const WorkerSeries& w, int pid, int worker, nlohmann::json& events) {
  std::array<double, 3> trackEnd = {-1e300, -1e300, -1e300};
  for (const SeriesPoint& p : w.steps) {
    const double compute = lookup(w.compute, p.step);
    const double wait = lookup(w.wait, p.step);
    const double comm = lookup(w.comm, p.step);
    const double stepMs =
        w.stepsAreCompute ? compute + wait + comm : (std::isnan(p.value) ? 0.0 : p.value);
    // Phases laid out from the step's start: compute, wait, communication.
    const double startUs = (p.wallMs - stepMs) * 1000.0;
    const std::array<double, 3> durations = {compute * 1000.0, comm * 1000.0, wait * 1000.0};
    const std::array<double, 3> offsets = {0.0, (compute + wait) * 1000.0, compute * 1000.0};
    for (int kind = 0; kind < 3; ++kind) {
      if (!(durations[kind] > 0.0)) continue;
      const double ts = std::max(startUs + offsets[kind], trackEnd[kind]);
      trackEnd[kind] = ts + durations[kind];
      events.push_back({{"ph", "X"},
                        {"name", kKinds[kind]},
                        {"cat", kKinds[kind]},
                        {"pid", pid},
                        {"tid", tidOf(worker, kind)},
                        {"ts", ts},
                        {"dur", durations[kind]},
                        {"args", {{"step", p.step}}}});
    }
  }
}

}  // namespace

nlohmann::json chromeTrace(ProjectStore& store, int64_t runId, const TraceOptions& options) {
  const RunRecord run = store.requireRun(runId);
  nlohmann::json events = nlohmann::json::array();

  events.push_back(metadata("process_name", kRunPid, 0, {{"name", "run " + run.name}}));
  events.push_back(metadata("process_sort_index", kRunPid, 0, {{"sort_index", 0}}));
  events.push_back(metadata("thread_name", kRunPid, 1, {{"name", "events"}}));

  // Gather each worker's series ((node, worker) -> series) and the run-level ones.
  std::map<std::pair<int, int>, WorkerSeries> workers;
  for (const SeriesInfo& s : store.series(runId)) {
    const bool perWorker = s.node >= 0 && s.worker >= 0;
    if (!perWorker) {
      if (s.node != kNoNode || (s.key != metric::kTestAccuracy && s.key != metric::kTestLoss))
        continue;
      for (const SeriesPoint& p : store.readSeries(s.id, options.fromStep, options.toStep)) {
        if (std::isnan(p.value)) continue;
        events.push_back({{"ph", "C"},
                          {"name", s.key},
                          {"pid", kRunPid},
                          {"tid", 0},
                          {"ts", p.wallMs * 1000.0},
                          {"args", {{s.key, p.value}}}});
      }
      continue;
    }
    WorkerSeries& w = workers[{s.node, s.worker}];
    auto points = [&] { return store.readSeries(s.id, options.fromStep, options.toStep); };
    if (s.key == metric::kStepMs) {
      w.steps = points();
      w.stepsAreCompute = false;
    } else if (s.key == metric::kComputeMs) {
      std::vector<SeriesPoint> p = points();
      w.compute = byStep(p);
      if (w.steps.empty()) {
        w.steps = std::move(p);
        w.stepsAreCompute = true;
      }
    } else if (s.key == metric::kCommMs) {
      w.comm = byStep(points());
    } else if (s.key == metric::kWaitMs) {
      w.wait = byStep(points());
    } else if (s.key == metric::kSamplesPerS) {
      w.samplesPerS = points();
    }
  }

  std::map<int, bool> nodesNamed;
  for (auto& [id, w] : workers) {
    const auto [node, worker] = id;
    const int pid = kNodePidBase + node;
    if (!nodesNamed[node]) {
      nodesNamed[node] = true;
      events.push_back(
          metadata("process_name", pid, 0, {{"name", "node " + std::to_string(node)}}));
      events.push_back(metadata("process_sort_index", pid, 0, {{"sort_index", 1 + node}}));
    }
    for (int kind = 0; kind < 3; ++kind) {
      const int tid = tidOf(worker, kind);
      events.push_back(
          metadata("thread_name", pid, tid,
                   {{"name", "worker " + std::to_string(worker) + " " + kKinds[kind]}}));
      events.push_back(metadata("thread_sort_index", pid, tid, {{"sort_index", tid}}));
    }

    appendStepPhases(w, pid, worker, events);
    const std::string series = "worker " + std::to_string(worker);
    for (const SeriesPoint& p : w.samplesPerS) {
      if (std::isnan(p.value)) continue;
      events.push_back({{"ph", "C"},
                        {"name", metric::kSamplesPerS},
                        {"pid", pid},
                        {"tid", 0},
                        {"ts", p.wallMs * 1000.0},
                        {"args", {{series, p.value}}}});
    }
  }

  for (const RunEvent& e : store.events(runId)) {
    if ((options.fromStep && e.step < *options.fromStep) ||
        (options.toStep && e.step > *options.toStep))
      continue;
    events.push_back({{"ph", "i"},
                      {"name", e.kind},
                      {"s", "g"},
                      {"pid", kRunPid},
                      {"tid", 1},
                      {"ts", e.wallMs * 1000.0},
                      {"args", {{"detail", e.detail}, {"step", e.step}}}});
  }

  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ms"},
          {"otherData",
           {{"project", store.path()},
            {"run_id", run.id},
            {"run_name", run.name},
            {"strategy", run.strategy},
            {"status", toString(run.status)},
            {"generator", "DTLab " DTLAB_VERSION}}}};
}

}  // namespace dtlab::core
