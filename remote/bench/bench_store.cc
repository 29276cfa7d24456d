// `dtlab-cli bench store` (remote/bench/bench_store.h).
#include "remote/bench/bench_store.h"

#include <string>

#include "remote/bench/bench_common.h"

namespace dtlab::bench {

StoreBenchOutcome runStoreBench(const core::StoreBenchConfig& config, std::FILE* out) {
  std::fprintf(
      out,
      "bench store: SQLite project files, chunk rows through PointAppender%s; the same points,\n"
      "  series and queries on both sides, repetitions interleaved, medians\n",
      config.reference ? ", beside one row per point" : "");
  std::fprintf(out, "  %s\n", machineDescription().c_str());
  std::fflush(out);
  const core::StoreBenchResult r = core::benchStore(
      config, [](const std::string& line) { std::fprintf(stderr, "  %s\n", line.c_str()); });
  auto side = [](const core::StoreSideResult& s) {
    return nlohmann::json{{"ingest_points_per_s", s.ingestPointsPerS},
                          {"ingest_seconds", s.ingestSeconds},
                          {"ingest_commits", s.ingestCommits},
                          {"file_bytes", s.fileBytes},
                          {"query_ms", s.queryMs},
                          {"query_returned_points", s.queryReturnedPoints},
                          {"wrong", s.wrongIngest + s.wrongBuckets}};
  };
  auto print = [out](const char* name, const core::StoreSideResult& s) {
    std::fprintf(out,
                 "  %-6s ingest %10.0f points/s (%.2f s, %lld commits, %.1f MB)   query %8.2f ms "
                 "(%lld points back)   wrong: %lld points, %lld buckets\n",
                 name, s.ingestPointsPerS, s.ingestSeconds, static_cast<long long>(s.ingestCommits),
                 static_cast<double>(s.fileBytes) / 1e6, s.queryMs,
                 static_cast<long long>(s.queryReturnedPoints),
                 static_cast<long long>(s.wrongIngest), static_cast<long long>(s.wrongBuckets));
  };
  std::fprintf(out,
               "  ingest: %lld points over %d series per repetition, median of %d; query: a "
               "%lld-point series, %d buckets, median of %d\n",
               static_cast<long long>(r.chunks.ingestPoints), config.workers * 9,
               config.ingestRepetitions, static_cast<long long>(config.queryPoints), config.buckets,
               config.repetitions);
  print("chunks", r.chunks);
  StoreBenchOutcome outcome;
  outcome.figures = r;
  nlohmann::json& json = outcome.json;
  json = {{"bench", "store"},
          {"ingest_points", r.chunks.ingestPoints},
          {"query_points", config.queryPoints},
          {"buckets", config.buckets},
          {"chunks", side(r.chunks)},
          // The chunked store's figures at the top level, as before.
          {"ingest_points_per_s", r.chunks.ingestPointsPerS},
          {"query_ms", r.chunks.queryMs}};
  int64_t wrong = r.chunks.wrongIngest + r.chunks.wrongBuckets;
  if (r.rows) {
    print("rows", *r.rows);
    const double ingestRatio = r.chunks.ingestPointsPerS / r.rows->ingestPointsPerS;
    const double queryRatio = r.rows->queryMs / r.chunks.queryMs;
    std::fprintf(out, "  ratio  chunks / rows: ingest %.2fx, query %.1fx faster\n", ingestRatio,
                 queryRatio);
    json["reference"] = side(*r.rows);
    json["reference"]["impl"] = "row_per_point";
    json["ratio_ingest"] = ingestRatio;
    json["ratio_query"] = queryRatio;
    wrong += r.rows->wrongIngest + r.rows->wrongBuckets;
  } else {
    json["reference"] = nullptr;
  }
  json["wrong"] = wrong;
  outcome.wrong = wrong;
  std::fprintf(out, "  targets ingest >= 500000 points/s: %s; query < 50 ms: %s\n",
               r.chunks.ingestPointsPerS >= 500000.0 ? "met" : "NOT met",
               r.chunks.queryMs < 50.0 ? "met" : "NOT met");
  return outcome;
}

}  // namespace dtlab::bench
