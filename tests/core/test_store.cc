// The project store with real files in a temporary directory: round trips of every
// entity, the run lifecycle, points through the appender, downsampling that keeps each
// bucket's true min and max, migration from schema version 1, refused files left
// byte-for-byte unchanged, and CSV export.
#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include "core/spec/spec_json.h"
#include "core/store/csv_export.h"
#include "core/store/point_appender.h"
#include "core/store/project_store.h"
#include "core/store/schema.h"
#include "core/store/sqlite_db.h"
#include "core/store/store_bench.h"

using namespace dtlab::core;
namespace fs = std::filesystem;

namespace {

std::string readBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The message of the StoreError that f throws (fails the test when it throws nothing).
template <typename F>
std::string errorOf(F&& f) {
  try {
    f();
  } catch (const StoreError& e) {
    return e.what();
  }
  return "(no error)";
}

double stored(double v) {
  return static_cast<double>(static_cast<float>(v));
}

// The bucket arithmetic querySeries documents: equal widths over [from, to].
int64_t bucketOf(double x, double from, double to, int64_t n) {
  const double width = (to - from) / static_cast<double>(n);
  const double scale = width > 0.0 ? 1.0 / width : 0.0;
  return std::clamp<int64_t>(static_cast<int64_t>((x - from) * scale), 0, n - 1);
}

struct Expected {
  int64_t count = 0;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
};

// Writes points through an appender and waits for the commit.
void appendAll(const std::string& path, int64_t runId, const std::string& key, int worker,
               const std::vector<SeriesPoint>& points) {
  PointAppender appender(path);
  const SeriesHandle h = appender.series(runId, 0, worker, key);
  for (const SeriesPoint& p : points) appender.append(h, p.step, p.wallMs, p.value);
  appender.close();
}

int64_t chunkRows(const std::string& path) {
  sqlite::Db db(path, SQLITE_OPEN_READONLY);
  return db.queryInt("SELECT count(*) FROM chunks");
}

}  // namespace

class TestStore : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir dir_;
  std::string file(const char* name) {
    return (fs::path(dir_.path().toStdString()) / name).string();
  }

 private slots:
  void createRefusesExistingAndReopens() {
    const std::string path = file("create.dtlab");
    {
      auto store = ProjectStore::create(path, "My project");
      QCOMPARE(store->schemaVersion(), kSchemaVersion);
      QCOMPARE(store->metadata().at("name"), std::string("My project"));
      QVERIFY(store->metadata().count("created_ms") == 1);
      store->setMetadata("note", "kept");
    }
    QVERIFY(!fs::exists(path + ".creating-" + std::to_string(::getpid())));
    const std::string before = readBytes(path);
    QVERIFY(errorOf([&] { ProjectStore::create(path); }).find("already exists") !=
            std::string::npos);
    QCOMPARE(readBytes(path), before);
    auto store = ProjectStore::open(path);
    QCOMPARE(store->metadata().at("note"), std::string("kept"));
    sqlite::Db raw(path, SQLITE_OPEN_READONLY);
    QCOMPARE(raw.queryText("PRAGMA journal_mode"), std::string("wal"));
    QCOMPARE(raw.queryInt("PRAGMA application_id"), int64_t{kProjectApplicationId});
  }

  void entitiesRoundTrip() {
    auto store = ProjectStore::create(file("entities.dtlab"));
    for (EntityKind kind : {EntityKind::kDataset, EntityKind::kTopology, EntityKind::kExperiment}) {
      const nlohmann::json a = {{"kind", "gaussian_blobs"}, {"n", 3}, {"list", {1, 2.5, "x"}}};
      const nlohmann::json b = {{"nodes", nlohmann::json::array({{{"speed", 0.5}}})}};
      const int64_t idA = store->createEntity(kind, "alpha", a);
      const int64_t idB = store->createEntity(kind, "beta, with comma", b);
      QVERIFY(idA != idB);
      std::optional<Entity> e = store->entity(kind, idA);
      QVERIFY(e.has_value());
      QCOMPARE(e->name, std::string("alpha"));
      QCOMPARE(e->config, a);
      QVERIFY(e->createdMs > 0 && e->updatedMs == e->createdMs);
      QCOMPARE(store->entityByName(kind, "beta, with comma")->config, b);
      QCOMPARE(store->entities(kind).size(), std::size_t{2});
      QVERIFY(errorOf([&] { store->createEntity(kind, "alpha", b); }).find("already exists") !=
              std::string::npos);
      store->updateEntity(kind, idA, "alpha2", b);
      QCOMPARE(store->entity(kind, idA)->name, std::string("alpha2"));
      QCOMPARE(store->entity(kind, idA)->config, b);
      QCOMPARE(store->putEntity(kind, "alpha2", a), idA);  // replaces by name
      QCOMPARE(store->entity(kind, idA)->config, a);
      const int64_t idC = store->putEntity(kind, "gamma", a);  // creates
      QCOMPARE(store->entityByName(kind, "gamma")->id, idC);
      store->deleteEntity(kind, idB);
      QVERIFY(!store->entity(kind, idB).has_value());
      QVERIFY(errorOf([&] { store->deleteEntity(kind, idB); }).find("no ") != std::string::npos);
      QVERIFY(errorOf([&] { store->updateEntity(kind, 999, "x", a); }).find("999") !=
              std::string::npos);
    }
    // Kinds are separate name spaces.
    QCOMPARE(store->entities(EntityKind::kDataset).size(), std::size_t{2});
  }

  void runLifecycleRoundTrip() {
    const std::string path = file("runs.dtlab");
    auto store = ProjectStore::create(path);
    const int64_t experiment = store->createEntity(EntityKind::kExperiment, "exp", {{"a", 1}});
    RunStart start;
    start.experimentId = experiment;
    start.name = "run A";
    start.strategy = "sync_allreduce";
    start.seed = 0xfedcba9876543210ull;  // above INT64_MAX: stored by bit pattern
    start.spec = {{"name", "run A"}, {"seed", 7}};
    const int64_t id = store->beginRun(start);
    RunRecord r = store->requireRun(id);
    QCOMPARE(r.status, RunStatus::kRunning);
    QCOMPARE(r.name, start.name);
    QCOMPARE(r.strategy, start.strategy);
    QCOMPARE(r.seed, start.seed);
    QCOMPARE(r.spec, start.spec);
    QCOMPARE(*r.experimentId, experiment);
    QVERIFY(r.startedMs > 1600000000000);
    QVERIFY(!r.endedMs.has_value());
    QVERIFY(r.programVersion.rfind("DTLab ", 0) == 0);

    store->addEvent(id, {0, 1.5, "start", "two workers"});
    store->addEvent(id, {10, 20.25, "rebalance", "shares 0.6/0.4"});
    const std::vector<RunEvent> events = store->events(id);
    QCOMPARE(events.size(), std::size_t{2});
    QCOMPARE(events[1].kind, std::string("rebalance"));
    QCOMPARE(events[1].detail, std::string("shares 0.6/0.4"));
    QCOMPARE(events[1].step, int64_t{10});
    QCOMPARE(events[1].wallMs, 20.25);

    QVERIFY(errorOf([&] { store->deleteRun(id); }).find("still marked running") !=
            std::string::npos);
    RunSummary summary;
    summary.name = "run A";
    summary.strategy = "sync_allreduce";
    summary.status = RunStatus::kCompleted;
    summary.stopReason = StopReason::kEpochs;
    summary.steps = 42;
    summary.finalTestAccuracy = 0.875;
    summary.paramChecksum = {"abc", "abc"};
    store->finishRun(id, summary);
    r = store->requireRun(id);
    QCOMPARE(r.status, RunStatus::kCompleted);
    QVERIFY(r.endedMs.has_value() && *r.endedMs >= r.startedMs);
    QCOMPARE(*store->runSummary(id), toJson(summary));

    // A second run; deleting the experiment keeps the runs.
    const int64_t id2 =
        store->beginRun({std::nullopt, "run B", "async_ps", 1, nullptr, std::nullopt, 0});
    store->setRunStatus(id2, RunStatus::kFailed, "node lost");
    QCOMPARE(store->requireRun(id2).error, std::string("node lost"));
    QVERIFY(store->requireRun(id2).spec.is_null());
    {
      // A status this build does not know (a newer DTLab wrote it) reads as unknown, and
      // reading it changes nothing in the file.
      sqlite::Db raw(path, SQLITE_OPEN_READWRITE);
      raw.exec(("UPDATE runs SET status = 'paused' WHERE id = " + std::to_string(id2)).c_str());
    }
    QCOMPARE(store->requireRun(id2).status, RunStatus::kUnknown);
    QCOMPARE(std::string(toString(store->requireRun(id2).status)), std::string("unknown"));
    {
      sqlite::Db raw(path, SQLITE_OPEN_READONLY);
      const std::string sql = "SELECT count(*) FROM runs WHERE status = 'paused'";
      QCOMPARE(raw.queryInt(sql.c_str()), int64_t{1});
    }
    store->setRunStatus(id2, RunStatus::kFailed, "node lost");
    QCOMPARE(store->runs().size(), std::size_t{2});
    store->deleteEntity(EntityKind::kExperiment, experiment);
    QVERIFY(!store->requireRun(id).experimentId.has_value());

    // Missing runs are named, with the ids there are.
    const std::string missing = errorOf([&] { store->requireRun(77); });
    QVERIFY2(missing.find("no run 77") != std::string::npos, missing.c_str());
    QVERIFY2(missing.find(std::to_string(id2)) != std::string::npos, missing.c_str());

    // Deleting a run removes its series, points, events, metrics and summary.
    appendAll(path, id, "loss", 0, {{1, 1.0, 0.5}, {2, 2.0, 0.25}});
    QCOMPARE(store->series(id).size(), std::size_t{1});
    store->deleteRun(id);
    QVERIFY(!store->run(id).has_value());
    sqlite::Db raw(path, SQLITE_OPEN_READONLY);
    for (const char* table : {"series", "chunks", "events", "run_metrics", "run_summaries"}) {
      const std::string sql = std::string("SELECT count(*) FROM ") + table;
      QCOMPARE(raw.queryInt(sql.c_str()), int64_t{0});
    }
    QVERIFY(errorOf([&] { store->deleteRun(id); }).find("no run") != std::string::npos);
  }

  void pointsEventsAndMetricsRoundTrip() {
    const std::string path = file("points.dtlab");
    auto store = ProjectStore::create(path);
    const int64_t run = store->beginRun({std::nullopt, "r", "single", 1, nullptr, std::nullopt, 0});
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<double> value(-3.0, 3.0);
    std::vector<std::vector<SeriesPoint>> written(3);
    {
      PointAppender appender(path);
      std::vector<SeriesHandle> h;
      for (int w = 0; w < 3; ++w) h.push_back(appender.series(run, 0, w, "loss"));
      h.push_back(appender.series(run, kNoNode, kNoWorker, "test_accuracy"));
      QCOMPARE(appender.series(run, 0, 1, "loss"), h[1]);  // same key, same handle
      // Worker w writes 5000 + 3000 w points (crossing chunk boundaries differently),
      // interleaved, with a NaN in the middle.
      for (int64_t step = 0; step < 11000; ++step) {
        for (int w = 0; w < 3; ++w) {
          if (step >= 5000 + 3000 * w) continue;
          SeriesPoint p{step, 0.5 * static_cast<double>(step) + w, value(rng)};
          if (w == 2 && step == 4321) p.value = std::nan("");
          appender.append(h[static_cast<std::size_t>(w)], p.step, p.wallMs, p.value);
          p.value = stored(p.value);
          written[static_cast<std::size_t>(w)].push_back(p);
        }
        if (step == 2500) appender.appendEvent(run, {step, 1250.0, "rebalance", "halfway"});
        if (step % 1000 == 0) appender.flush();
      }
      appender.append(h[3], 100, 50.0, 0.5);
      appender.append(h[3], 200, 100.0, 0.75);
      appender.append(h[3], 300, 150.0, 0.625);
      appender.close();
      QCOMPARE(appender.committedPoints(), int64_t{5000 + 8000 + 11000 + 3});
    }
    for (int w = 0; w < 3; ++w) {
      const std::optional<int64_t> id = store->findSeries(run, 0, w, "loss");
      QVERIFY(id.has_value());
      const std::vector<SeriesPoint> got = store->readSeries(*id);
      const std::vector<SeriesPoint>& want = written[static_cast<std::size_t>(w)];
      QCOMPARE(got.size(), want.size());
      for (std::size_t i = 0; i < want.size(); ++i) {
        QCOMPARE(got[i].step, want[i].step);
        QCOMPARE(got[i].wallMs, want[i].wallMs);
        if (std::isnan(want[i].value)) {
          QVERIFY(std::isnan(got[i].value));
        } else {
          QCOMPARE(got[i].value, want[i].value);
        }
      }
      // A step range.
      const std::vector<SeriesPoint> part = store->readSeries(*id, 1000, 1999);
      QCOMPARE(part.size(), std::size_t{1000});
      QCOMPARE(part.front().step, int64_t{1000});
      QCOMPARE(part.back().step, int64_t{1999});
    }
    const std::vector<SeriesInfo> series = store->series(run);
    QCOMPARE(series.size(), std::size_t{4});
    QCOMPARE(series[0].key, std::string("loss"));
    QCOMPARE(series[2].count, int64_t{11000});
    QCOMPARE(series[2].maxStep, int64_t{10999});
    QCOMPARE(series[3].key, std::string("test_accuracy"));
    QCOMPARE(series[3].node, kNoNode);

    // run_metrics: all workers' loss together; last = highest step; NaN ignored.
    Expected loss;
    for (const auto& points : written)
      for (const SeriesPoint& p : points) {
        ++loss.count;
        if (std::isnan(p.value)) continue;
        loss.min = std::min(loss.min, p.value);
        loss.max = std::max(loss.max, p.value);
      }
    const std::vector<RunMetric> metrics = store->runMetrics(run);
    QCOMPARE(metrics.size(), std::size_t{2});
    QCOMPARE(metrics[0].key, std::string("loss"));
    QCOMPARE(metrics[0].count, loss.count);
    QCOMPARE(metrics[0].minValue, loss.min);
    QCOMPARE(metrics[0].maxValue, loss.max);
    QCOMPARE(metrics[0].lastStep, int64_t{10999});
    QCOMPARE(metrics[0].lastValue, written[2].back().value);
    QCOMPARE(metrics[1].key, std::string("test_accuracy"));
    QCOMPARE(metrics[1].lastValue, 0.625);
    QCOMPARE(metrics[1].maxValue, 0.75);
    QCOMPARE(metrics[1].lastStep, int64_t{300});

    const std::vector<RunEvent> events = store->events(run);
    QCOMPARE(events.size(), std::size_t{1});
    QCOMPARE(events[0].detail, std::string("halfway"));
  }

  void writerErrorsReachFlushNotAppend() {
    // A run deleted (forced) while it is recorded: the writer stops with a message naming
    // the run; append() keeps returning (it runs on training threads), flush() and close()
    // report; what committed before stays.
    const std::string path = file("deleted-while-recording.dtlab");
    auto store = ProjectStore::create(path);
    const int64_t keep =
        store->beginRun({std::nullopt, "keep", "single", 1, nullptr, std::nullopt, 0});
    const int64_t doomed =
        store->beginRun({std::nullopt, "doomed", "single", 1, nullptr, std::nullopt, 0});
    PointAppender appender(path);
    const SeriesHandle a = appender.series(keep, 0, 0, "loss");
    const SeriesHandle b = appender.series(doomed, 0, 0, "loss");
    appender.append(a, 1, 1.0, 1.0);
    appender.append(b, 1, 1.0, 1.0);
    appender.flush();
    store->deleteRun(doomed, true);
    appender.append(a, 2, 2.0, 2.0);
    appender.append(b, 2, 2.0, 2.0);
    const std::string message = errorOf([&] { appender.flush(); });
    QVERIFY2(
        message.find("run " + std::to_string(doomed) + ", which is not in") != std::string::npos,
        message.c_str());
    appender.append(a, 3, 3.0, 3.0);  // no throw
    QVERIFY(errorOf([&] { appender.close(); }).find("deleted while") != std::string::npos);
    QCOMPARE(store->readSeries(*store->findSeries(keep, 0, 0, "loss")).size(), std::size_t{1});
  }

  void slowSeriesChunksStayFew() {
    // A few points per commit: open chunks are merged, so a series does not end up as
    // thousands of tiny rows, and no point is lost or duplicated on the way.
    const std::string path = file("slow.dtlab");
    auto store = ProjectStore::create(path);
    const int64_t run = store->beginRun({std::nullopt, "r", "single", 1, nullptr, std::nullopt, 0});
    PointAppender appender(path);
    const SeriesHandle h = appender.series(run, 0, 0, "loss");
    int64_t step = 0;
    for (int commit = 0; commit < 700; ++commit) {
      for (int i = 0; i < 7; ++i, ++step) appender.append(h, step, step * 2.0, std::sin(step));
      appender.flush();
      if (commit % 97 == 0) {
        // Readers see every committed point exactly once, mid-way too.
        const std::vector<SeriesPoint> now =
            store->readSeries(*store->findSeries(run, 0, 0, "loss"));
        QCOMPARE(static_cast<int64_t>(now.size()), step);
        for (int64_t j = 0; j < step; ++j) QCOMPARE(now[static_cast<std::size_t>(j)].step, j);
      }
    }
    appender.close();
    const std::vector<SeriesPoint> all = store->readSeries(*store->findSeries(run, 0, 0, "loss"));
    QCOMPARE(static_cast<int64_t>(all.size()), step);
    for (int64_t j = 0; j < step; ++j) {
      QCOMPARE(all[static_cast<std::size_t>(j)].step, j);
      QCOMPARE(all[static_cast<std::size_t>(j)].value, stored(std::sin(j)));
    }
    // 4,900 points: one full chunk plus at most 32 open ones.
    QVERIFY2(chunkRows(path) <= 1 + 32, std::to_string(chunkRows(path)).c_str());
  }

  void downsamplingKeepsTrueMinAndMax() {
    const std::string path = file("downsample.dtlab");
    auto store = ProjectStore::create(path);
    const int64_t run = store->beginRun({std::nullopt, "r", "single", 1, nullptr, std::nullopt, 0});
    std::mt19937_64 rng(11);
    std::uniform_int_distribution<int> gap(1, 3);
    std::normal_distribution<double> noise(0.0, 1.0);
    std::vector<SeriesPoint> points;
    int64_t step = 100;
    double wall = 0.0;
    for (int i = 0; i < 60000; ++i) {
      step += gap(rng);
      wall += 0.5 + std::abs(noise(rng));  // uneven wall-clock spacing
      double v = std::sin(static_cast<double>(i) * 1e-3) + 0.3 * noise(rng);
      if (i % 7919 == 0) v = 40.0 + i * 1e-4;  // spikes a bad reduction would lose
      if (i % 10007 == 0) v = std::nan("");
      points.push_back({step, wall, v});
    }
    appendAll(path, run, "loss", 0, points);
    const int64_t id = *store->findSeries(run, 0, 0, "loss");

    struct Case {
      XAxis axis;
      std::optional<double> from, to;
      int buckets;
    };
    const double midStep = static_cast<double>(points[20000].step);
    const std::vector<Case> cases = {
        {XAxis::kStep, std::nullopt, std::nullopt, 2000},  // blobs decoded
        {XAxis::kStep, std::nullopt, std::nullopt, 7},     // mostly whole-chunk aggregates
        {XAxis::kStep, midStep, midStep + 30000.0, 500},   // a sub-range
        {XAxis::kWallMs, std::nullopt, std::nullopt, 1000}, {XAxis::kWallMs, 1000.0, 20000.0, 13},
    };
    for (const Case& c : cases) {
      SeriesQuery q;
      q.seriesId = id;
      q.axis = c.axis;
      q.from = c.from;
      q.to = c.to;
      q.buckets = c.buckets;
      const SeriesData data = store->querySeries(q);
      QVERIFY(data.downsampled);
      auto xOf = [&](const SeriesPoint& p) {
        return c.axis == XAxis::kStep ? static_cast<double>(p.step) : p.wallMs;
      };
      const double from = c.from.value_or(xOf(points.front()));
      const double to = c.to.value_or(xOf(points.back()));
      QCOMPARE(data.from, from);
      QCOMPARE(data.to, to);
      std::vector<Expected> want(static_cast<std::size_t>(c.buckets));
      int64_t inRange = 0;
      for (const SeriesPoint& p : points) {
        const double x = xOf(p);
        if (x < from || x > to) continue;
        ++inRange;
        Expected& e = want[static_cast<std::size_t>(bucketOf(x, from, to, c.buckets))];
        ++e.count;
        if (std::isnan(p.value)) continue;
        e.min = std::min(e.min, stored(p.value));
        e.max = std::max(e.max, stored(p.value));
      }
      QCOMPARE(data.pointsInRange, inRange);
      int64_t nonEmpty = 0;
      for (const Expected& e : want) nonEmpty += e.count > 0 ? 1 : 0;
      QCOMPARE(static_cast<int64_t>(data.buckets.size()), nonEmpty);
      for (const SeriesBucket& b : data.buckets) {
        const std::size_t index =
            static_cast<std::size_t>(bucketOf(b.from + (b.to - b.from) * 0.5, from, to, c.buckets));
        const Expected& e = want[index];
        QCOMPARE(b.count, e.count);
        QVERIFY(b.hasValue);
        QCOMPARE(b.min.value, e.min);
        QCOMPARE(b.max.value, e.max);
        // The min/max points are real points of that bucket.
        QCOMPARE(bucketOf(xOf(b.min), from, to, c.buckets), static_cast<int64_t>(index));
        QCOMPARE(bucketOf(xOf(b.max), from, to, c.buckets), static_cast<int64_t>(index));
      }
      // Chart points: at most two per bucket, in x order.
      QVERIFY(data.points.size() <= 2 * data.buckets.size());
      for (std::size_t i = 1; i < data.points.size(); ++i)
        QVERIFY(xOf(data.points[i - 1]) <= xOf(data.points[i]));
    }

    // A narrow range or many buckets: the raw points, flagged as such.
    SeriesQuery narrow;
    narrow.seriesId = id;
    narrow.from = static_cast<double>(points[30000].step);
    narrow.to = static_cast<double>(points[30999].step);
    narrow.buckets = 2000;
    SeriesData raw = store->querySeries(narrow);
    QVERIFY(!raw.downsampled);
    QCOMPARE(raw.points.size(), std::size_t{1000});
    QCOMPARE(raw.points.front().step, points[30000].step);
    QCOMPARE(raw.points.back().value, stored(points[30999].value));
    narrow.from.reset();
    narrow.to.reset();
    narrow.buckets = 0;
    QCOMPARE(store->querySeries(narrow).points.size(), points.size());
    // An empty range and an unknown series give empty results, not errors.
    narrow.from = 1e12;
    QVERIFY(store->querySeries(narrow).points.empty());
    narrow.seriesId = 12345;
    QVERIFY(store->querySeries(narrow).points.empty());
  }

  void migratesFromVersion1() {
    // A v1 file as DTLab's first layout wrote it (one row per point), built with raw SQL.
    const std::string path = file("v1.dtlab");
    {
      sqlite::Db db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
      db.exec(R"sql(
        PRAGMA application_id = 1146375234;
        CREATE TABLE project_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
        CREATE TABLE datasets (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
          config TEXT NOT NULL, created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL);
        CREATE TABLE topologies (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
          config TEXT NOT NULL, created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL);
        CREATE TABLE experiments (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
          config TEXT NOT NULL, created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL);
        CREATE TABLE runs (id INTEGER PRIMARY KEY,
          experiment_id INTEGER REFERENCES experiments(id) ON DELETE SET NULL,
          name TEXT NOT NULL, strategy TEXT NOT NULL, seed INTEGER NOT NULL,
          status TEXT NOT NULL, started_ms INTEGER NOT NULL, ended_ms INTEGER,
          program_version TEXT NOT NULL, spec TEXT, error TEXT);
        CREATE INDEX runs_by_experiment ON runs(experiment_id);
        CREATE TABLE series (id INTEGER PRIMARY KEY,
          run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
          node INTEGER NOT NULL, worker INTEGER NOT NULL, key TEXT NOT NULL,
          UNIQUE (run_id, key, node, worker));
        CREATE TABLE points (series_id INTEGER NOT NULL REFERENCES series(id) ON DELETE CASCADE,
          step INTEGER NOT NULL, wall_ms REAL NOT NULL, value REAL,
          PRIMARY KEY (series_id, step)) WITHOUT ROWID;
        CREATE TABLE events (id INTEGER PRIMARY KEY,
          run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
          step INTEGER NOT NULL, wall_ms REAL NOT NULL, kind TEXT NOT NULL, detail TEXT NOT NULL);
        CREATE INDEX events_by_run ON events(run_id, step);
        CREATE TABLE run_summaries (run_id INTEGER PRIMARY KEY
          REFERENCES runs(id) ON DELETE CASCADE, summary TEXT NOT NULL);
        INSERT INTO project_meta VALUES ('name', 'old project'), ('created_ms', '1700000000000');
        INSERT INTO datasets VALUES (1, 'blobs', '{"kind":"gaussian_blobs"}', 1, 2);
        INSERT INTO topologies VALUES (1, 'two nodes', '{"nodes":2}', 1, 1);
        INSERT INTO experiments VALUES (1, 'exp', '{"name":"exp"}', 1, 1);
        INSERT INTO runs VALUES (1, 1, 'old run', 'sync_allreduce', 9, 'completed',
          1700000000000, 1700000100000, 'DTLab 0.0.9', '{"name":"exp"}', '');
        INSERT INTO series VALUES (1, 1, 0, 0, 'loss'), (2, 1, 0, 1, 'loss'),
          (3, 1, -1, -1, 'test_accuracy'), (4, 1, 0, 0, 'wait_ms');
        INSERT INTO events VALUES (1, 1, 0, 0.5, 'start', 'v1 start');
        INSERT INTO run_summaries VALUES (1, '{"status":"completed","steps":9000}');
        PRAGMA user_version = 1;
      )sql");
      // 9,000 points per loss series (over two chunks), sparse accuracy, no wait_ms points.
      sqlite::Transaction t(db);
      sqlite::Statement insert(db, "INSERT INTO points VALUES (?, ?, ?, ?)");
      for (int64_t s = 1; s <= 2; ++s)
        for (int64_t step = 1; step <= 9000; ++step)
          insert.bind(1, s).bind(2, step).bind(3, step * 1.25).bind(4, 1.0 / (step + s)).run();
      for (int64_t step = 1000; step <= 9000; step += 1000)
        insert.bind(1, int64_t{3}).bind(2, step).bind(3, step * 1.25).bind(4, step * 1e-4).run();
      t.commit();
    }
    auto store = ProjectStore::open(path);
    QCOMPARE(store->schemaVersion(), kSchemaVersion);
    QCOMPARE(store->metadata().at("name"), std::string("old project"));
    QCOMPARE(store->entityByName(EntityKind::kDataset, "blobs")->config["kind"],
             nlohmann::json("gaussian_blobs"));
    QCOMPARE(store->entities(EntityKind::kTopology).size(), std::size_t{1});
    const RunRecord run = store->requireRun(1);
    QCOMPARE(run.name, std::string("old run"));
    QCOMPARE(run.seed, uint64_t{9});
    QCOMPARE(store->events(1).at(0).detail, std::string("v1 start"));
    QCOMPARE((*store->runSummary(1))["steps"], nlohmann::json(9000));
    for (int worker = 0; worker < 2; ++worker) {
      const std::vector<SeriesPoint> pts =
          store->readSeries(*store->findSeries(1, 0, worker, "loss"));
      QCOMPARE(pts.size(), std::size_t{9000});
      for (std::size_t i = 0; i < pts.size(); ++i) {
        const int64_t step = static_cast<int64_t>(i) + 1;
        QCOMPARE(pts[i].step, step);
        QCOMPARE(pts[i].wallMs, step * 1.25);
        QCOMPARE(pts[i].value, stored(1.0 / (step + worker + 1)));
      }
    }
    QCOMPARE(store->readSeries(*store->findSeries(1, kNoNode, kNoWorker, "test_accuracy")).size(),
             std::size_t{9});
    // run_metrics rebuilt from the points.
    const std::vector<RunMetric> metrics = store->runMetrics(1);
    QCOMPARE(metrics.size(), std::size_t{2});
    QCOMPARE(metrics[0].key, std::string("loss"));
    QCOMPARE(metrics[0].count, int64_t{18000});
    QCOMPARE(metrics[0].lastStep, int64_t{9000});
    QCOMPARE(metrics[0].maxValue, stored(0.5));
    QCOMPARE(metrics[1].lastValue, stored(0.9));
    // Downsampling works on migrated data, and the old table is gone.
    SeriesQuery q;
    q.seriesId = *store->findSeries(1, 0, 0, "loss");
    q.buckets = 100;
    QVERIFY(store->querySeries(q).downsampled);
    store.reset();
    sqlite::Db raw(path, SQLITE_OPEN_READONLY);
    QCOMPARE(raw.queryInt("SELECT count(*) FROM sqlite_schema WHERE name = 'points'"), int64_t{0});
    QCOMPARE(raw.queryText("PRAGMA integrity_check"), std::string("ok"));
    QCOMPARE(raw.queryText("PRAGMA journal_mode"), std::string("wal"));
  }

  void newFileRunsEveryMigrationStep() {
    // Version 0 is the empty file: create() runs every step, so a new project has exactly
    // the tables a migrated one has.
    int count = 0;
    const Migration* steps = migrationSteps(&count);
    QCOMPARE(count, kSchemaVersion);
    for (int i = 0; i < count; ++i) QCOMPARE(steps[i].from, i);
    // The schema's SQL text with layout differences (line breaks, indentation) removed.
    auto schemaOf = [](const std::string& path) {
      sqlite::Db db(path, SQLITE_OPEN_READONLY);
      sqlite::Statement s(db, "SELECT type, name, sql FROM sqlite_schema ORDER BY name");
      std::string out;
      while (s.step()) {
        std::string sql;
        for (char c : s.columnText(2)) {
          const bool space = std::isspace(static_cast<unsigned char>(c)) != 0;
          if (space && (sql.empty() || sql.back() == ' ' || sql.back() == '(')) continue;
          if ((c == ')' || c == ',') && !sql.empty() && sql.back() == ' ') sql.pop_back();
          sql += space ? ' ' : c;
        }
        out += s.columnText(0) + " " + s.columnText(1) + ": " + sql + "\n";
      }
      return out;
    };
    ProjectStore::create(file("fresh.dtlab"));
    QVERIFY(fs::exists(file("v1.dtlab")));  // from migratesFromVersion1
    QCOMPARE(schemaOf(file("fresh.dtlab")), schemaOf(file("v1.dtlab")));
  }

  void refusedFilesAreUnchanged() {
    // A real project with data, to truncate and to damage.
    const std::string good = file("good.dtlab");
    {
      auto store = ProjectStore::create(good);
      const int64_t run =
          store->beginRun({std::nullopt, "r", "single", 1, nullptr, std::nullopt, 0});
      std::vector<SeriesPoint> pts;
      for (int64_t i = 0; i < 50000; ++i) pts.push_back({i, i * 1.0, std::cos(i * 0.01)});
      appendAll(good, run, "loss", 0, pts);
      for (int i = 0; i < 300; ++i)
        store->createEntity(EntityKind::kDataset, "dataset " + std::to_string(i),
                            {{"padding", std::string(200, 'x')}});
    }
    const std::string goodBytes = readBytes(good);
    QVERIFY(goodBytes.size() > 100000);

    struct Case {
      const char* name;
      std::string bytes;
      const char* expect;
    };
    std::mt19937_64 rng(3);
    std::string random(20000, '\0');
    for (char& c : random) c = static_cast<char>(rng());
    std::string newer = goodBytes;
    newer[60 + 3] = static_cast<char>(kSchemaVersion + 1);  // user_version (big-endian, at 60)
    std::string foreign = goodBytes;
    foreign[68] = foreign[69] = foreign[70] = foreign[71] = 0;  // application_id = 0
    std::string damaged = goodBytes;
    // Overwrite pages in the middle (the B-tree pages of the dataset table come last).
    for (std::size_t i = goodBytes.size() - 40000; i < goodBytes.size() - 8192; ++i)
      damaged[i] = static_cast<char>(rng());
    const std::vector<Case> cases = {
        {"random.dtlab", random, "not an SQLite database"},
        {"text.dtlab", "hello, this is not a project\n", "not an SQLite database"},
        {"empty.dtlab", "", "empty file"},
        {"header-only.dtlab", goodBytes.substr(0, 60), "truncated"},
        {"truncated.dtlab", goodBytes.substr(0, goodBytes.size() / 2), "truncated"},
        {"newer.dtlab", newer, "newer DTLab"},
        {"foreign.dtlab", foreign, "not a DTLab project"},
        {"damaged.dtlab", damaged, "damaged"},
    };
    for (const Case& c : cases) {
      const std::string path = file(c.name);
      writeBytes(path, c.bytes);
      for (bool readOnly : {false, true}) {
        const std::string message = errorOf([&] { ProjectStore::open(path, readOnly); });
        QVERIFY2(message.find(c.expect) != std::string::npos, (c.name + (": " + message)).c_str());
        QVERIFY2(message.find(path) != std::string::npos, message.c_str());
        QVERIFY2(readBytes(path) == c.bytes, c.name);
        QVERIFY2(!fs::exists(path + "-wal") && !fs::exists(path + "-journal"), c.name);
      }
      // The appender refuses it too (all but the damaged file, whose body it does not
      // check: it runs on files a ProjectStore opened and checked), and so does create().
      if (std::string(c.name) != "damaged.dtlab")
        QVERIFY2(errorOf([&] { PointAppender appender(path); }).find(c.expect) != std::string::npos,
                 c.name);
      QVERIFY(errorOf([&] { ProjectStore::create(path); }).find("already exists") !=
              std::string::npos);
      QVERIFY2(readBytes(path) == c.bytes, c.name);
    }
    QVERIFY(errorOf([&] {
              ProjectStore::open(file("missing.dtlab"));
            }).find("no such project file") != std::string::npos);
    QVERIFY(!fs::exists(file("missing.dtlab")));
    // The intact original still opens.
    QCOMPARE(ProjectStore::open(good)->runs().size(), std::size_t{1});
  }

  void failedUpgradeLeavesTheFileAsItWas() {
    // A version-1 project with a table of a later version's name in it: the upgrade's early
    // steps succeed, the step that creates that table fails. The file must stay at version
    // 1, byte for byte, not half-way up at a version between.
    const std::string path = file("upgrade-fails.dtlab");
    {
      sqlite::Db db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
      int count = 0;
      migrationSteps(&count)[0].apply(db);
      db.exec("INSERT INTO project_meta VALUES ('name', 'old')");
      db.exec("CREATE TABLE calibrations (note TEXT)");
      db.exec(("PRAGMA application_id = " + std::to_string(kProjectApplicationId)).c_str());
      db.exec("PRAGMA user_version = 1");
    }
    const std::string before = readBytes(path);
    const std::string message = errorOf([&] { ProjectStore::open(path); });
    QVERIFY2(message.find("the file is unchanged") != std::string::npos, message.c_str());
    QVERIFY2(message.find("add calibrations") != std::string::npos, message.c_str());
    QVERIFY2(message.find(path) != std::string::npos, message.c_str());
    QVERIFY2(readBytes(path) == before, "a failed upgrade changed the file");
    sqlite::Db db(path, SQLITE_OPEN_READONLY);
    QCOMPARE(db.queryInt("PRAGMA user_version"), int64_t{1});
  }

  void readOnlyOpenReads() {
    const std::string path = file("readonly.dtlab");
    {
      auto store = ProjectStore::create(path);
      store->createEntity(EntityKind::kTopology, "t", {{"nodes", 4}});
    }
    auto store = ProjectStore::open(path, true);
    QCOMPARE(store->entities(EntityKind::kTopology).size(), std::size_t{1});
    QVERIFY(errorOf([&] {
              store->createEntity(EntityKind::kTopology, "u", {});
            }).find("readonly") != std::string::npos);
  }

  void csvExport() {
    const std::string path = file("csv.dtlab");
    auto store = ProjectStore::create(path);
    const int64_t run =
        store->beginRun({std::nullopt, "name, \"quoted\"", "single", 4, nullptr, std::nullopt, 0});
    appendAll(path, run, "loss", 0, {{1, 0.5, 2.0}, {2, 1.0, 0.1}});
    appendAll(path, run, "test_accuracy", 0, {{2, 1.0, 0.75}});
    RunSummary summary;
    summary.status = RunStatus::kCompleted;
    summary.steps = 2;
    summary.samplesPerS = 1234.5;
    store->finishRun(run, summary);

    std::ostringstream runs;
    writeRunsCsv(*store, runs);
    const std::string text = runs.str();
    QVERIFY(text.rfind("run_id,name,experiment_id,strategy,seed,status,", 0) == 0);
    QVERIFY2(text.find("\n1,\"name, \"\"quoted\"\"\",,single,4,completed,") != std::string::npos,
             text.c_str());
    QVERIFY2(text.find(",2,0.1,,0.75,0.75,1234.5,") != std::string::npos, text.c_str());

    std::ostringstream series;
    writeSeriesCsv(*store, run, series);
    QCOMPARE(series.str(), std::string("run_id,node,worker,key,step,wall_ms,value\n"
                                       "1,0,0,loss,1,0.5,2\n"
                                       "1,0,0,loss,2,1,0.1\n"
                                       "1,0,0,test_accuracy,2,1,0.75\n"));
    std::ostringstream onlyLoss;
    writeSeriesCsv(*store, run, onlyLoss, {"test_accuracy"});
    QCOMPARE(onlyLoss.str(), std::string("run_id,node,worker,key,step,wall_ms,value\n"
                                         "1,0,0,test_accuracy,2,1,0.75\n"));
    std::ostringstream none;
    QVERIFY(errorOf([&] { writeSeriesCsv(*store, 5, none); }).find("no run 5") !=
            std::string::npos);
  }

  // The store benchmark gives the one-row-per-point reference the same work as the chunked
  // store (same points and series, same query), and checks both sides' results.
  void benchGivesBothSidesTheSameWork() {
    StoreBenchConfig config;
    config.directory = dir_.path().toStdString();
    // 1000 steps of every worker metric of both workers (the bench appends whole steps).
    config.ingestPoints = static_cast<int64_t>(metricsOf(MetricScope::kWorker).size()) * 2 * 1000;
    config.workers = 2;
    config.ingestRepetitions = 2;
    config.queryPoints = 5000;
    config.buckets = 100;
    config.repetitions = 2;
    const StoreBenchResult r = benchStore(config);
    QVERIFY(r.rows.has_value());
    for (const StoreSideResult* side : {&r.chunks, &*r.rows}) {
      QCOMPARE(side->ingestPoints, config.ingestPoints);
      QCOMPARE(side->wrongIngest, int64_t{0});
      QCOMPARE(side->wrongBuckets, int64_t{0});
      QVERIFY(side->ingestPointsPerS > 0.0 && side->queryMs > 0.0);
      QVERIFY(side->fileBytes > 0);
    }
    // Same buckets over the same data: the same min and max points come back.
    QCOMPARE(r.rows->queryReturnedPoints, r.chunks.queryReturnedPoints);
    QVERIFY(r.chunks.queryReturnedPoints > config.buckets);
  }
};

QTEST_APPLESS_MAIN(TestStore)
#include "test_store.moc"
