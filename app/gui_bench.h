#pragma once

#include <QtCore/QStringList>

namespace dtlab::app {

// `dtlab --bench [--runs R] [--points N] [--reps K] [--stream-seconds S] [--json]`: parses the
// flags, runs ui/bench/gui_bench.h's benchmark and prints its figures (and, with --json, one
// JSON line). Returns the exit code.
int runGuiBench(const QStringList& args);

}  // namespace dtlab::app
