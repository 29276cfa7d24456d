#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace dtlab::core {

class ProjectStore;

// CSV (RFC 4180: comma separated, header row, fields quoted when they hold a comma, quote
// or line break; NaN and missing values are empty fields; numbers in the shortest form
// that reads back to the same value).

// One row per run: run_id, name, experiment_id, strategy, seed, status, started_ms,
// ended_ms, program_version, steps, final_loss, final_test_loss, final_test_accuracy,
// best_test_accuracy, samples_per_s, wall_s, time_to_target_s, error. Metric columns come
// from the run_metrics table and the stored summary, so no point is read.
void writeRunsCsv(ProjectStore& store, std::ostream& out);

// Every point of a run in long format: run_id, node, worker, key, step, wall_ms, value,
// series by series (ordered by key, node, worker), each in step order. `keys` restricts
// the metric keys (empty: all).
void writeSeriesCsv(ProjectStore& store, int64_t runId, std::ostream& out,
                    const std::vector<std::string>& keys = {});

// A field quoted as RFC 4180 asks, when it needs quoting.
std::string csvField(std::string_view text);

}  // namespace dtlab::core
