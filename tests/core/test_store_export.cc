// What leaves the store and what feeds it from training: the Chrome trace export's
// documented structure, a real training run recorded through StoreSink/RunRecording, and
// the dtlab-cli project / export-trace / train --project commands on real files.
#include <QtTest/QtTest>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "core/store/project_store.h"
#include "core/store/store_sink.h"
#include "core/store/trace_export.h"
#include "core/train/local_trainer.h"

using namespace dtlab::core;
namespace fs = std::filesystem;

namespace {

ExperimentSpec smallSpec(const std::string& name) {
  ExperimentSpec spec;
  spec.name = name;
  spec.seed = 5;
  spec.dataset.trainSize = 1024;
  spec.dataset.testSize = 256;
  spec.model.hidden = {16};
  spec.training.batchSize = 64;
  spec.training.epochs = 2;
  spec.training.evalInterval = 8;
  spec.training.threads = 1;
  return spec;
}

struct ProcessResult {
  int exitCode = -1;
  std::string out;
  std::string err;
};

}  // namespace

class TestStoreExport : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir dir_;
  std::string file(const std::string& name) {
    return (fs::path(dir_.path().toStdString()) / name).string();
  }

  ProcessResult cli(const QStringList& args) {
    QProcess p;
    p.setWorkingDirectory(dir_.path());
    p.start(QString(DTLAB_BINARY_DIR) + "/app/dtlab-cli", args);
    ProcessResult r;
    if (!p.waitForFinished(120000)) return r;
    r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = p.readAllStandardOutput().toStdString();
    r.err = p.readAllStandardError().toStdString();
    return r;
  }

 private slots:
  void traceHasTheDocumentedStructure() {
    const std::string path = file("trace.dtlab");
    auto store = ProjectStore::create(path);
    const int64_t run =
        store->beginRun({std::nullopt, "traced", "sync_allreduce", 1, nullptr, std::nullopt, 0});
    {
      PointAppender appender(path);
      StoreSink sink(appender, run, 0);
      sink.onEvent({0, 0.0, "start", "two workers"});
      for (int64_t step = 1; step <= 50; ++step) {
        for (int w = 0; w < 2; ++w) {
          StepMetrics m;
          m.worker = w;
          m.step = step;
          m.wallMs = 10.0 * static_cast<double>(step) + 0.5 * w;
          m.stepMs = 10.0;
          m.computeMs = 6.0;
          m.waitMs = 1.0 + w;
          m.commMs = (w == 0 && step == 7) ? 0.0 : 3.0 - w;  // a step with no exchange
          m.samplesPerS = 1000.0 + w;
          m.loss = 1.0 / static_cast<double>(step);
          sink.onStep(m);
        }
        if (step % 25 == 0) sink.onEval({step, 10.0 * static_cast<double>(step), 0.5, 0.8});
      }
      sink.onEvent({30, 300.0, "rebalance", "0.6/0.4"});
      appender.close();
    }

    // Through text, as a viewer reads it.
    const nlohmann::json trace = nlohmann::json::parse(chromeTrace(*store, run).dump());
    QVERIFY(trace.is_object());
    QCOMPARE(trace["displayTimeUnit"], nlohmann::json("ms"));
    QCOMPARE(trace["otherData"]["run_id"], nlohmann::json(run));
    QCOMPARE(trace["otherData"]["run_name"], nlohmann::json("traced"));
    QCOMPARE(trace["otherData"]["strategy"], nlohmann::json("sync_allreduce"));
    const nlohmann::json& events = trace["traceEvents"];
    QVERIFY(events.is_array());

    std::map<std::pair<int, int>, std::string> threadNames;
    std::map<int, std::string> processNames;
    std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> spans;
    std::map<std::string, int> spanCount, counterCount, instantCount;
    std::map<std::string, double> firstCompute;
    for (const nlohmann::json& e : events) {
      QVERIFY(e.contains("ph") && e.contains("pid") && e.contains("name"));
      const std::string ph = e["ph"];
      const int pid = e["pid"];
      if (ph == "M") {
        if (e["name"] == "process_name") processNames[pid] = e["args"]["name"];
        if (e["name"] == "thread_name") threadNames[{pid, e["tid"].get<int>()}] = e["args"]["name"];
      } else if (ph == "X") {
        const std::string name = e["name"];
        QCOMPARE(e["cat"].get<std::string>(), name);
        QVERIFY(e["ts"].is_number() && e["dur"].is_number());
        QVERIFY(e["dur"].get<double>() > 0.0);
        QVERIFY(e["args"]["step"].is_number_integer());
        const int tid = e["tid"];
        spans[{pid, tid}].push_back({e["ts"].get<double>(), e["dur"].get<double>()});
        ++spanCount[std::to_string(tid) + " " + name];
        if (name == "compute" && e["args"]["step"] == 1 && tid == 1) firstCompute["ts"] = e["ts"];
      } else if (ph == "C") {
        QVERIFY(e["ts"].is_number() && e["args"].is_object() && !e["args"].empty());
        for (const auto& [series, value] : e["args"].items()) {
          QVERIFY(value.is_number());
          ++counterCount[e["name"].get<std::string>() + "/" + series];
        }
      } else if (ph == "i") {
        QCOMPARE(e["s"], nlohmann::json("g"));
        ++instantCount[e["name"]];
      } else {
        QFAIL(("unexpected phase " + ph).c_str());
      }
    }
    QCOMPARE(processNames[1], std::string("run traced"));
    QCOMPARE(processNames[100], std::string("node 0"));
    const char* kinds[] = {"compute", "communication", "wait"};
    for (int w = 0; w < 2; ++w)
      for (int k = 0; k < 3; ++k)
        QCOMPARE(threadNames[std::make_pair(100, 1 + 3 * w + k)],
                 "worker " + std::to_string(w) + " " + kinds[k]);
    // One span per step and kind, zero-length ones left out; every track named.
    QCOMPARE(spanCount["1 compute"], 50);
    QCOMPARE(spanCount["2 communication"], 49);
    QCOMPARE(spanCount["3 wait"], 50);
    QCOMPARE(spanCount["4 compute"], 50);
    QCOMPARE(spanCount["5 communication"], 50);
    QCOMPARE(spanCount["6 wait"], 50);
    for (const auto& [track, list] : spans) {
      QVERIFY(threadNames.count(track) == 1);
      for (std::size_t i = 1; i < list.size(); ++i)
        QVERIFY(list[i].first >= list[i - 1].first + list[i - 1].second - 1e-6);
    }
    // Step 1 of worker 0 ends at 10 ms after 10 ms: compute starts at 0 us and lasts 6 ms.
    QCOMPARE(firstCompute["ts"], 0.0);
    QCOMPARE(spans[std::make_pair(100, 1)][0].second, 6000.0);
    QCOMPARE(spans[std::make_pair(100, 3)][0].first, 6000.0);  // wait after compute
    QCOMPARE(spans[std::make_pair(100, 2)][0].first, 7000.0);  // then communication
    QCOMPARE(counterCount["samples_per_s/worker 0"], 50);
    QCOMPARE(counterCount["samples_per_s/worker 1"], 50);
    QCOMPARE(counterCount["test_accuracy/test_accuracy"], 2);
    QCOMPARE(counterCount["test_loss/test_loss"], 2);
    QCOMPARE(instantCount["start"], 1);
    QCOMPARE(instantCount["rebalance"], 1);

    // A step range keeps only those steps.
    TraceOptions range;
    range.fromStep = 10;
    range.toStep = 19;
    int inRange = 0;
    const nlohmann::json ranged = chromeTrace(*store, run, range);
    for (const nlohmann::json& e : ranged["traceEvents"]) {
      if (e["ph"] != "X") continue;
      QVERIFY(e["args"]["step"] >= 10 && e["args"]["step"] <= 19);
      ++inRange;
    }
    QCOMPARE(inRange, 10 * 6);
    QVERIFY_THROWS_EXCEPTION(StoreError, chromeTrace(*store, run + 1));
  }

  void recordsATrainingRun() {
    const std::string path = file("train.dtlab");
    auto store = ProjectStore::create(path);
    const ExperimentSpec spec = smallSpec("recorded");
    RunSummary summary;
    int64_t runId = 0;
    {
      RunRecording recording(*store, spec, "single");
      runId = recording.runId();
      QCOMPARE(store->requireRun(runId).status, RunStatus::kRunning);
      summary = trainLocal(spec, LocalTrainOptions{}, &recording.sink());
      recording.finish(summary);
    }
    QCOMPARE(std::string(toString(summary.status)), std::string("completed"));
    const RunRecord run = store->requireRun(runId);
    QCOMPARE(run.status, RunStatus::kCompleted);
    QCOMPARE(run.strategy, std::string("single"));
    QCOMPARE(run.seed, spec.seed);
    QVERIFY(sameExperiment(parseExperimentSpec(run.spec), spec));
    QCOMPARE(*store->runSummary(runId), toJson(summary));
    QCOMPARE(store->entity(EntityKind::kExperiment, *run.experimentId)->name,
             std::string("recorded"));
    // Eleven per-step series for the one worker (not divergence, which only asynchronous
    // strategies measure), test loss and accuracy for the run.
    QCOMPARE(store->series(runId).size(), std::size_t{13});
    std::map<std::string, RunMetric> metrics;
    for (const RunMetric& m : store->runMetrics(runId)) metrics[m.key] = m;
    QCOMPARE(metrics["loss"].count, summary.steps);
    QCOMPARE(metrics["loss"].lastStep, summary.steps);
    QCOMPARE(metrics["test_accuracy"].lastValue,
             static_cast<double>(static_cast<float>(*summary.finalTestAccuracy)));
    QCOMPARE(store->events(runId).size(), summary.events.size());

    // The same spec again: the same experiment, a new run.
    {
      RunRecording again(*store, spec, "single");
      QCOMPARE(store->requireRun(again.runId()).experimentId, run.experimentId);
      // Dropped without finish(): marked failed, not left "running".
      runId = again.runId();
    }
    QCOMPARE(store->requireRun(runId).status, RunStatus::kFailed);
    QCOMPARE(store->entities(EntityKind::kExperiment).size(), std::size_t{1});
  }

  void cliCommands() {
    const QString cliPath = QString(DTLAB_BINARY_DIR) + "/app/dtlab-cli";
    if (!QFileInfo::exists(cliPath)) QSKIP("dtlab-cli is not built");
    {
      std::ofstream spec(file("spec.json"));
      spec << toJson(smallSpec("cli run")).dump(2);
    }
    ProcessResult r = cli({"project", "new", "p.dtlab", "--name", "CLI test"});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    QVERIFY(fs::exists(file("p.dtlab")));
    r = cli({"project", "new", "p.dtlab"});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.find("already exists") != std::string::npos, r.err.c_str());

    r = cli({"train", "spec.json", "--project", "p.dtlab", "--quiet"});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    QVERIFY2(r.err.find("recorded run 1 in p.dtlab") != std::string::npos, r.err.c_str());
    const nlohmann::json trained = nlohmann::json::parse(r.out.substr(r.out.rfind("{\"runs\"")));
    const int64_t steps = trained["runs"][0]["steps"];

    r = cli({"project", "list", "p.dtlab", "--json"});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    const nlohmann::json list = nlohmann::json::parse(r.out);
    QCOMPARE(list["runs"].size(), std::size_t{1});
    QCOMPARE(list["runs"][0]["name"], nlohmann::json("cli run"));
    QCOMPARE(list["runs"][0]["status"], nlohmann::json("completed"));
    QCOMPARE(list["runs"][0]["steps"], nlohmann::json(steps));

    r = cli({"project", "show", "p.dtlab", "1", "--json"});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    const nlohmann::json shown = nlohmann::json::parse(r.out);
    QCOMPARE(shown["series"].size(), std::size_t{13});
    QCOMPARE(shown["summary"], trained["runs"][0]);
    r = cli({"project", "show", "p.dtlab"});
    QVERIFY2(r.exitCode == 0 && r.out.find("CLI test") != std::string::npos, r.out.c_str());

    r = cli({"project", "export-csv", "p.dtlab", "-o", "runs.csv"});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    std::ifstream runs(file("runs.csv"));
    std::string header, row;
    std::getline(runs, header);
    std::getline(runs, row);
    QVERIFY(header.rfind("run_id,name,", 0) == 0);
    QVERIFY2(row.rfind("1,cli run,", 0) == 0, row.c_str());
    r = cli({"project", "export-csv", "p.dtlab", "1", "--key", "loss"});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    QCOMPARE(static_cast<int64_t>(std::count(r.out.begin(), r.out.end(), '\n')), steps + 1);

    r = cli({"export-trace", "p.dtlab", "1", "-o", "trace.json"});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    std::ifstream traceFile(file("trace.json"));
    const nlohmann::json trace = nlohmann::json::parse(traceFile);
    QVERIFY(trace["traceEvents"].size() > static_cast<std::size_t>(steps));

    // Clear errors, distinct exit codes: 1 for a bad file or id, 2 for bad usage.
    r = cli({"project", "show", "p.dtlab", "5"});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.find("no run 5 in p.dtlab") != std::string::npos, r.err.c_str());
    r = cli({"project", "show", "missing.dtlab"});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.find("missing.dtlab: no such project file") != std::string::npos, r.err.c_str());
    {
      std::ofstream junk(file("junk.dtlab"));
      junk << "not a database";
    }
    r = cli({"project", "list", "junk.dtlab"});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.find("not an SQLite database") != std::string::npos, r.err.c_str());
    r = cli({"project", "list", "p.dtlab", "--nope"});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.find("unknown option --nope") != std::string::npos, r.err.c_str());
    r = cli({"export-trace", "p.dtlab", "one"});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.find("expected a run id") != std::string::npos, r.err.c_str());

    r = cli({"project", "delete-run", "p.dtlab", "1"});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    r = cli({"project", "list", "p.dtlab", "--json"});
    QCOMPARE(nlohmann::json::parse(r.out)["runs"].size(), std::size_t{0});
  }
};

QTEST_APPLESS_MAIN(TestStoreExport)
#include "test_store_export.moc"
