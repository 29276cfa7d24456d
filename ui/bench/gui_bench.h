#pragma once

#include <cstddef>
#include <cstdint>

namespace dtlab::ui {

// `dtlab --bench`: the workbench's two speed claims, each beside its alternative, in one run:
//  1. replot of the comparison chart (`runs` runs of `points` points each, read from a real
//     project file through the store's min/max downsampling) against a plain QCustomPlot
//     holding the same raw points; medians of `reps` timed replots after one untimed;
//  2. the GUI's event-loop latency (p50, p99: how late a 5 ms timer fires) while a 4-node run
//     started from the window streams its points into the live run page, and with nothing
//     running, for the baseline.
// Needs a QApplication; offscreen is fine (QT_QPA_PLATFORM=offscreen).
struct GuiBenchOptions {
  int runs = 8;
  int64_t points = 200000;
  int reps = 15;
  double streamSeconds = 6.0;
};

struct GuiBenchResult {
  std::size_t drawnPoints = 0;                        // by the comparison chart after downsampling
  double readMs = 0.0;                                // reading the comparison from the store
  double replotMsMedian = 0.0;                        // the comparison chart
  double referenceReplotMsMedian = 0.0;               // the plain QCustomPlot with every raw point
  double idleP50Ms = 0.0, idleP99Ms = 0.0;            // timer lateness with nothing running
  double streamingP50Ms = 0.0, streamingP99Ms = 0.0;  // while the run streams
  int livePoints = 0;  // drawn on the live run page's charts when the run was cancelled
};

GuiBenchResult runGuiBench(const GuiBenchOptions& options);

}  // namespace dtlab::ui
