#pragma once

#include <cstdint>
#include <optional>
#include <ostream>

#include <nlohmann/json.hpp>

namespace dtlab::core {

class ProjectStore;

struct TraceOptions {
  std::optional<int64_t> fromStep;  // steps outside [fromStep, toStep] are left out
  std::optional<int64_t> toStep;
};

// A run's timeline as Chrome trace-event JSON (the "JSON Object Format" that Perfetto and
// chrome://tracing open):
//
//   {"traceEvents": [...], "displayTimeUnit": "ms",
//    "otherData": {"project", "run_id", "run_name", "strategy", "status", "generator"}}
//
// Processes: pid 1 is the run itself ("run NAME": evaluation counters and events);
// pid 100 + n is node n ("node n").
// Tracks: on a node, tid = 1 + 3 * worker + kind, kind 0 compute, 1 communication,
// 2 wait, named "worker W compute" / "worker W communication" / "worker W wait" by
// "thread_name" metadata events ("ph":"M"), with "thread_sort_index" keeping that order;
// each process has "process_name" and "process_sort_index".
// Spans ("ph":"X", "cat" compute|communication|wait, ts and dur in microseconds since the
// run started, args.step): the store keeps per-step durations, not each phase's start,
// so a step is laid out backwards from its end (the point's wall_ms): it starts at
// wall_ms - step_ms, computes for compute_ms, waits for wait_ms, then communicates for
// comm_ms (a worker blocks on its peers before the exchange completes). Zero-length
// spans are left out; a span never starts before the previous one on its track ended.
// Counters ("ph":"C"): "samples_per_s" per node with one series per worker
// (args {"worker W": value}); "test_accuracy" and "test_loss" on the run process.
// Events ("ph":"i", "s":"g"): each run event, named by its kind, args.detail and
// args.step.
nlohmann::json chromeTrace(ProjectStore& store, int64_t runId, const TraceOptions& options = {});

}  // namespace dtlab::core
