#pragma once

#include "core/analysis/comparison_statistics.h"

namespace dtlab::core {

// The seed article's comparison of training strategies (consistency, efficiency, memory,
// communication, debuggability, fault tolerance), filled with one execution's measurements: a
// column per variant (headed by its strategy), a row per aspect and measure. Each cell is the
// median with its interval over the completed repetitions where a figure was measured, or says
// why there is none; its tooltip says how it was measured. The rows are a table of their own
// (seed_table.cc): each reads the variant's statistics, its runs and its strategy's descriptor,
// so a figure DTLab learns to measure (compression, replay) fills its row without changing the
// table's shape.
StatisticsTable seedTable(const Comparison& comparison, const ComparisonStatistics& statistics);

}  // namespace dtlab::core
