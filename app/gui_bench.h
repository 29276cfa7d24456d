#pragma once

#include <QtCore/QStringList>

namespace dtlab::app {

// `dtlab --bench [--runs R] [--points N] [--reps K] [--stream-seconds S] [--json]`: the
// workbench's two speed claims, each beside its alternative, in one run:
//  1. replot of the comparison chart (R runs of N points each, read from a real project file
//     through the store's min/max downsampling) against a plain QCustomPlot holding the same
//     raw points; medians of K timed replots after one untimed;
//  2. the GUI's event-loop latency (p50, p99: how late a 5 ms timer fires) while a 4-node run
//     started from the window streams its points into the live run page, and with nothing
//     running, for the baseline.
// Returns the exit code. Offscreen is fine (QT_QPA_PLATFORM=offscreen).
int runGuiBench(const QStringList& args);

}  // namespace dtlab::app
