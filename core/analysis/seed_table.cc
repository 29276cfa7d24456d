#include "core/analysis/seed_table.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "core/train/strategy_registry.h"

namespace dtlab::core {
namespace {

// What a row's cell may read: the variant's statistics, its runs, and its strategy's
// descriptor (null for a strategy this build does not know).
struct SeedCell {
  const VariantStatistics& variant;
  std::vector<const ComparisonRow*> runs;
  const StrategyDescriptor* strategy;
  std::string level;  // "95%"
};

struct CellText {
  std::string text;
  std::string tooltip;
};

const ComparisonColumn& column(std::string_view key) {
  for (const ComparisonColumn& c : comparisonColumns())
    if (c.key == key) return c;
  throw Error("no comparison column '" + std::string(key) + "'");
}

// The median [interval] of a measured figure, or why there is none.
CellText figure(const SeedCell& c, std::string_view key, const std::string& what,
                const std::string& missing = "not measured") {
  const FigureStatistics* f = c.variant.figure(key);
  if (f == nullptr) return {missing, what + ": no completed run of this variant measured it"};
  return {formatInterval(column(key), f->interval),
          what + "; median of " + std::to_string(f->interval.n) + " completed runs" +
              (f->interval.n > 1 ? ", " + c.level + " percentile-bootstrap interval" : "")};
}

bool usesServer(const SeedCell& c) {
  return c.strategy != nullptr && c.strategy->traits.usesParameterServer;
}

struct SeedRow {
  const char* aspect;
  const char* measure;
  CellText (*cell)(const SeedCell&);
};

const SeedRow kRows[] = {
    {"consistency", "staleness (max)",
     [](const SeedCell& c) {
       return figure(c, "max_staleness",
                     "the largest staleness of a run: the server's version when a gradient "
                     "was applied minus the version it was computed from (0: every worker "
                     "always computed on the current model)");
     }},
    {"consistency", "divergence",
     [](const SeedCell& c) {
       return figure(c, "mean_divergence",
                     "the distance between a worker's model and the server's at each pull, "
                     "relative to the server model's norm, averaged over the run",
                     usesServer(c) ? "not measured" : "none: replicas identical");
     }},
    {"efficiency", "time to target (s)",
     [](const SeedCell& c) {
       return figure(c, "time_to_target_s",
                     "seconds from the start until the test accuracy first reached the target",
                     "target not reached");
     }},
    {"efficiency", "samples/s",
     [](const SeedCell& c) {
       return figure(c, "samples_per_s", "training samples of all workers per second of the run");
     }},
    {"efficiency", "utilisation",
     [](const SeedCell& c) {
       return figure(c, "mean_utilization",
                     "the mean over workers of compute time / step wall time");
     }},
    {"memory", "peak per worker (MiB)",
     [](const SeedCell& c) {
       return figure(c, "peak_mem_bytes",
                     "the resident memory of the largest worker process at its peak");
     }},
    {"communication", "bytes per sample",
     [](const SeedCell& c) {
       CellText t = figure(c, "bytes_per_sample",
                           "bytes a worker sent and received per training sample (gradients, "
                           "weights, control)");
       // The variant's compression (its "compression" setting): how many times fewer bytes
       // its collectives carried than float32 would have.
       if (c.variant.figure("bytes_per_sample") == nullptr) return t;
       const FigureStatistics* ratio = c.variant.figure("compression_ratio");
       if (ratio == nullptr) {
         t.text += ", uncompressed";
         t.tooltip += "; float32 gradients and weights (the variant sets no compression)";
       } else {
         // "33.1x [27.9, 33.4]": the median's factor, then its interval.
         const std::string interval = formatInterval(column("compression_ratio"), ratio->interval);
         const std::size_t end = std::min(interval.find(' '), interval.size());
         t.text += ", compressed ";
         t.text.append(interval, 0, end);
         t.text.push_back('x');
         t.text.append(interval, end, std::string::npos);
         t.tooltip +=
             "; compressed (the variant's \"compression\"): its collectives, or pushes and pulls, "
             "carried that many "
             "times fewer bytes than float32 gradients or weights";
       }
       return t;
     }},
    {"debuggability", "replayable",
     [](const SeedCell& c) {
       if (c.strategy != nullptr && c.strategy->traits.replaysFromRecord)
         return CellText{"from its record: dtlab-cli replay",
                         "The order in which pushes reach the parameter server is a race, so a "
                         "run is not reproducible from its seed alone; DTLab records every push "
                         "the server applied, and `dtlab-cli replay P.dtlab RUN` re-runs a run "
                         "in one process to the same parameters bit for bit."};
       return CellText{"from its seed",
                       "A synchronous run applies the same averaged gradient everywhere in a "
                       "fixed order; the same spec and seed repeat it (when shares follow "
                       "measured speed, so do the measured speeds)."};
     }},
    {"fault tolerance", "node loss",
     [](const SeedCell& c) {
       int64_t recovered = 0;
       int64_t failedOnLoss = 0;
       double recoveryS = 0.0;
       int64_t stepsLost = 0;
       for (const ComparisonRow* r : c.runs) {
         if (r->recoveries && *r->recoveries > 0) {
           recovered += *r->recoveries;
           recoveryS += r->recoveryS.value_or(0.0);
           stepsLost += r->stepsLost.value_or(0);
         }
         if (r->status == RunStatus::kFailed && r->stopReason == StopReason::kNodeLost)
           ++failedOnLoss;
       }
       if (recovered == 0 && failedOnLoss == 0)
         return CellText{"not measured", "no node was lost in this execution's runs of it"};
       std::string text;
       if (recovered > 0) {
         char buffer[96];
         std::snprintf(buffer, sizeof(buffer), "survived %lld (%.2f s, %lld steps lost)",
                       static_cast<long long>(recovered),
                       recoveryS / static_cast<double>(recovered),
                       static_cast<long long>(stepsLost));
         text = buffer;
       }
       if (failedOnLoss > 0)
         text += (text.empty() ? "" : "; ") + std::to_string(failedOnLoss) + " run" +
                 (failedOnLoss == 1 ? "" : "s") + " failed";
       return CellText{text,
                       "node losses met by its runs: survived (mean recovery time, steps taken "
                       "again) under its on_node_loss policy, or runs that failed with a lost "
                       "node"};
     }},
};

}  // namespace

StatisticsTable seedTable(const Comparison& comparison, const ComparisonStatistics& statistics) {
  StatisticsTable t;
  char level[32];
  std::snprintf(level, sizeof(level), "%g%%", 100.0 * statistics.bootstrap.level);
  t.caption = "the seed article's comparison, measured: medians over the completed runs [" +
              std::string(level) + " bootstrap interval]; hover a cell for how it was measured";
  t.header = {"aspect", "measure"};
  t.textColumns = {true, true};
  std::vector<SeedCell> cells;
  for (const VariantStatistics& v : statistics.variants) {
    SeedCell cell{v, {}, findStrategy(v.strategy), level};
    for (const ComparisonRow& r : comparison.rows)
      if (r.variant == v.variant) cell.runs.push_back(&r);
    cells.push_back(std::move(cell));
    t.header.push_back(v.variant == v.strategy || v.strategy.empty()
                           ? v.variant
                           : v.variant + " (" + v.strategy + ")");
    t.textColumns.push_back(false);
  }
  for (const SeedRow& row : kRows) {
    std::vector<std::string> line = {row.aspect, row.measure};
    std::vector<std::string> tips = {"", ""};
    for (const SeedCell& cell : cells) {
      CellText c = row.cell(cell);
      line.push_back(std::move(c.text));
      tips.push_back(std::move(c.tooltip));
    }
    t.rows.push_back(std::move(line));
    t.tooltips.push_back(std::move(tips));
  }
  return t;
}

}  // namespace dtlab::core
