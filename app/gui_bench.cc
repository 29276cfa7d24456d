// `dtlab --bench`: flags in, figures out; the benchmark itself is ui/bench/gui_bench.h.
#include "app/gui_bench.h"

#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "ui/bench/gui_bench.h"

namespace dtlab::app {

int runGuiBench(const QStringList& args) {
  ui::GuiBenchOptions options;
  bool json = false;
  for (int i = 0; i < args.size(); ++i) {
    const auto value = [&](int min, int max) {
      bool ok = false;
      const int v = i + 1 < args.size() ? args[i + 1].toInt(&ok) : 0;
      if (!ok || v < min || v > max) {
        std::fprintf(stderr, "dtlab --bench: %s expects a number in [%d, %d]\n",
                     qPrintable(args[i]), min, max);
        std::exit(2);
      }
      ++i;
      return v;
    };
    if (args[i] == "--runs")
      options.runs = value(1, 64);
    else if (args[i] == "--points")
      options.points = value(1, 10'000'000);
    else if (args[i] == "--reps")
      options.reps = value(1, 1000);
    else if (args[i] == "--stream-seconds")
      options.streamSeconds = value(1, 600);
    else if (args[i] == "--json")
      json = true;
    else if (args[i] != "--bench") {
      std::fprintf(stderr, "dtlab --bench: unknown argument %s\n", qPrintable(args[i]));
      return 2;
    }
  }
  const ui::GuiBenchResult r = ui::runGuiBench(options);
  const int runs = options.runs, reps = options.reps;
  const int64_t points = options.points;
  const double dtlabMedian = r.replotMsMedian, plainMedian = r.referenceReplotMsMedian;
  std::printf("dtlab --bench: %d runs x %lld points, chart 1200x700, %d timed replots each\n", runs,
              static_cast<long long>(points), reps);
  std::printf(
      "  comparison chart (store min/max downsampling, %zu points drawn, read %.0f ms): "
      "replot_ms_median %.2f\n",
      r.drawnPoints, r.readMs, dtlabMedian);
  std::printf(
      "  plain QCustomPlot with every raw point (%lld points):            replot_ms_median "
      "%.2f\n",
      static_cast<long long>(points) * runs, plainMedian);
  std::printf("  ratio plain / comparison chart: %.1fx\n",
              dtlabMedian > 0 ? plainMedian / dtlabMedian : 0.0);
  std::printf(
      "  event loop (5 ms timer lateness): idle p50 %.2f ms p99 %.2f ms; while a 4-node "
      "run streams into the live run page (%d points drawn on its five charts): p50 %.2f ms, "
      "event_loop_p99_ms %.2f\n",
      r.idleP50Ms, r.idleP99Ms, r.livePoints, r.streamingP50Ms, r.streamingP99Ms);
  if (json)
    std::printf("%s\n", nlohmann::json{{"runs", runs},
                                       {"points", points},
                                       {"replot_ms_median", dtlabMedian},
                                       {"reference_replot_ms_median", plainMedian},
                                       {"drawn_points", r.drawnPoints},
                                       {"event_loop_p50_ms", r.streamingP50Ms},
                                       {"event_loop_p99_ms", r.streamingP99Ms},
                                       {"idle_event_loop_p99_ms", r.idleP99Ms},
                                       {"live_points", r.livePoints}}
                            .dump()
                            .c_str());
  return 0;
}

}  // namespace dtlab::app
