// async_ps and ssp through real daemons: the ParameterServer service of each shard's node,
// the workers' gRPC clients, the coordinator's summary (staleness, divergence, bytes), and a
// shard killed mid-run failing the run within seconds, naming its node.
#include <QtCore/QElapsedTimer>
#include <QtCore/QProcess>
#include <QtTest/QtTest>

#include <csignal>
#include <memory>

#include <nlohmann/json.hpp>

#include "core/nn/model_kinds.h"
#include "core/spec/spec_json.h"
#include "core/train/parameter_server.h"
#include "tests/e2e/e2e_support.h"

using namespace dtlab;

namespace {

using e2e::kCli;
using e2e::kNode;
using e2e::writeSpec;

core::ExperimentSpec psSpec() {
  core::ExperimentSpec spec;
  spec.seed = 7;
  spec.dataset.kind = "gaussian_blobs";
  spec.dataset.trainSize = 6144;
  spec.dataset.testSize = 512;
  spec.dataset.features = 32;
  spec.dataset.classes = 4;
  spec.model.hidden = {128};
  spec.training.batchSize = 96;
  spec.training.epochs = 0;
  spec.training.maxSteps = 40;
  spec.training.evalInterval = 20;
  spec.cluster.localNodes = 3;
  spec.cluster.nodes = {core::NodeConfig{}, core::NodeConfig{}, core::NodeConfig{}};
  spec.cluster.nodes[2].speed = 0.3;
  auto variant = [](const char* json) {
    return core::parseExperimentSpec(
               {{"cluster", {{"local_nodes", 3}}}, {"variants", {nlohmann::json::parse(json)}}})
        .variants[0];
  };
  spec.variants = {variant(R"({"strategy": "sync_allreduce"})"),
                   variant(R"({"strategy": "async_ps"})"),
                   variant(R"({"strategy": "ssp", "staleness": 1})"),
                   variant(R"({"name": "one_shard", "strategy": "async_ps", "ps_shards": 1})"),
                   variant(R"({"strategy": "hybrid", "switch_at": 0.5})")};
  return spec;
}

// A dtlab-node on a free loopback port; its address once it listens.
struct Daemon {
  QProcess process;
  QString address;
  bool start() {
    process.start(QString::fromStdString(kNode), {"--listen", "127.0.0.1:0"});
    if (!process.waitForStarted(10000)) return false;
    QByteArray out;
    while (!out.contains('\n') && process.waitForReadyRead(10000))
      out += process.readAllStandardOutput();
    const int at = out.indexOf("listening on ");
    if (at < 0) return false;
    address = QString::fromUtf8(out.mid(at + 13, out.indexOf('\n', at) - at - 13)).trimmed();
    return true;
  }
  ~Daemon() {
    process.kill();
    process.waitForFinished(5000);
  }
};

}  // namespace

class TestParameterServerCli : public QObject {
  Q_OBJECT
 private slots:
  void asyncModesTrainThroughTheShardsOfTheirNodes() {
    QTemporaryDir dir;
    const core::ExperimentSpec spec = psSpec();
    QProcess p;
    p.start(kCli, {"run", writeSpec(dir, spec), "--quiet"});
    QVERIFY(p.waitForFinished(120000));
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(p.exitCode() == 0, qPrintable(err));
    const auto out = nlohmann::json::parse(
        QString::fromUtf8(p.readAllStandardOutput()).trimmed().split('\n').last().toStdString());
    const nlohmann::json& runs = out["runs"];
    QCOMPARE(runs.size(), std::size_t{5});
    const double params = static_cast<double>(core::modelParameterCount(spec));
    for (const nlohmann::json& run : runs) {
      QVERIFY2(run["status"] == "completed", run.dump().c_str());
      QCOMPARE(run["stop_reason"], nlohmann::json("max_steps"));
      QVERIFY2(run["steps"].get<int64_t>() >= 40, run.dump().c_str());
    }
    const nlohmann::json& sync = runs[0];
    QCOMPARE(sync["mean_staleness"].get<double>(), 0.0);
    QVERIFY(sync["mean_divergence"].is_null());
    for (const nlohmann::json& run : {runs[1], runs[2], runs[3]}) {
      // Every step pulls and pushes the whole model (4 bytes a parameter each way) for its
      // 32 samples.
      const double expected = 2.0 * 4.0 * params / 32.0;
      QVERIFY2(std::abs(run["bytes_per_sample"].get<double>() - expected) < 0.01 * expected,
               run.dump().c_str());
      QVERIFY2(run["mean_divergence"].is_number(), run.dump().c_str());
      QVERIFY2(run["final_test_accuracy"].get<double>() > 0.5, run.dump().c_str());
      const auto& events = run["events"];
      QVERIFY(std::any_of(events.begin(), events.end(), [&](const nlohmann::json& e) {
        return e["kind"] == "start" &&
               e["detail"].get<std::string>().find(
                   run["name"] == "one_shard" ? "1 shard in" : "3 shards in") != std::string::npos;
      }));
    }
    // Asynchronous workers were stale: others pushed between their pulls and pushes.
    QVERIFY2(runs[1]["mean_staleness"].get<double>() > 0.0, runs[1].dump().c_str());
    // Under ssp the fast workers waited for the slow one; under async_ps nobody waited.
    QVERIFY2(runs[2]["mean_wait_fraction"].get<double>() > 0.0, runs[2].dump().c_str());
    QCOMPARE(runs[1]["mean_wait_fraction"].get<double>(), 0.0);
    // hybrid: synchronous for 20 steps, then the server (reset over the wire to the
    // synchronous weights) for the other 20.
    const nlohmann::json& hybrid = runs[4];
    QCOMPARE(hybrid["switches"].get<int64_t>(), int64_t{1});
    QVERIFY2(hybrid["mean_staleness"].get<double>() > 0.0, hybrid.dump().c_str());
    QVERIFY2(hybrid["final_test_accuracy"].get<double>() > 0.5, hybrid.dump().c_str());
    const auto& events = hybrid["events"];
    QVERIFY(std::any_of(events.begin(), events.end(), [](const nlohmann::json& e) {
      return e["kind"] == "strategy_switch" && e["step"] == 20 &&
             e["detail"].get<std::string>().find("sync -> async at step 20 of 40") == 0;
    }));
  }

  // Compressed pushes and pulls over real daemons (gRPC; ps_encoding.h): top-k pushes go as
  // their nonzero entries with float32 pulls, fp16 and bf16 both ways as 16-bit values; the
  // bytes that moved say so, and the runs train.
  void compressedPushesAndPullsCrossTheWire() {
    QTemporaryDir dir;
    core::ExperimentSpec spec = psSpec();
    auto variant = [](const char* json) {
      return core::parseExperimentSpec(
                 {{"cluster", {{"local_nodes", 3}}}, {"variants", {nlohmann::json::parse(json)}}})
          .variants[0];
    };
    spec.variants = {
        variant(R"({"strategy": "async_ps"})"),
        variant(R"({"name": "topk", "strategy": "async_ps", "compression": "topk",
                    "topk_ratio": 0.01})"),
        variant(R"({"name": "fp16", "strategy": "ssp", "staleness": 1, "compression": "fp16"})"),
        variant(R"({"name": "bf16", "strategy": "hybrid", "switch_at": 0.5,
                    "compression": "bf16"})")};
    QProcess p;
    p.start(kCli, {"run", writeSpec(dir, spec), "--quiet"});
    QVERIFY(p.waitForFinished(120000));
    QVERIFY2(p.exitCode() == 0, qPrintable(QString::fromUtf8(p.readAllStandardError())));
    const auto out = nlohmann::json::parse(
        QString::fromUtf8(p.readAllStandardOutput()).trimmed().split('\n').last().toStdString());
    const nlohmann::json& runs = out["runs"];
    QCOMPARE(runs.size(), std::size_t{4});
    for (const nlohmann::json& run : runs) {
      QVERIFY2(run["status"] == "completed", run.dump().c_str());
      QVERIFY2(run["final_test_accuracy"].get<double>() > 0.5, run.dump().c_str());
    }
    const double params = static_cast<double>(core::modelParameterCount(spec));
    const double plain = runs[0]["bytes_per_sample"].get<double>();
    QVERIFY2(std::abs(plain - 2.0 * 4.0 * params / 32.0) < 0.01 * plain, runs[0].dump().c_str());
    QVERIFY(runs[0]["compression_ratio"].is_null());
    // topk: float32 pulls, pushes of 1% of the values at 8 bytes each (and a count per block).
    const double topk = runs[1]["bytes_per_sample"].get<double>();
    QVERIFY2(topk < 0.56 * plain && topk > 0.5 * plain, runs[1].dump().c_str());
    QVERIFY2(runs[1]["compression_ratio"].get<double>() > 1.8, runs[1].dump().c_str());
    // fp16: 2 bytes a value each way (and a scale per block).
    const double fp16 = runs[2]["bytes_per_sample"].get<double>();
    QVERIFY2(std::abs(fp16 - 0.5 * plain) < 0.01 * plain, runs[2].dump().c_str());
    // The hybrid's synchronous half all-reduces bf16 gradients, its asynchronous half pushes
    // and pulls bf16 values.
    QVERIFY2(runs[3]["compression_ratio"].get<double>() > 1.9, runs[3].dump().c_str());
    const auto& events = runs[1]["events"];
    QVERIFY(std::any_of(events.begin(), events.end(), [](const nlohmann::json& e) {
      return e["kind"] == "start" && e["detail"].get<std::string>().find(
                                         "pushes as sparse, pulls as float32") != std::string::npos;
    }));
  }

  void aKilledShardFailsTheRunWithinSecondsNamingItsNode() {
    std::vector<std::unique_ptr<Daemon>> daemons;
    QStringList nodes;
    for (int i = 0; i < 3; ++i) {
      daemons.push_back(std::make_unique<Daemon>());
      QVERIFY(daemons.back()->start());
      nodes << "--node" << daemons.back()->address;
    }
    QTemporaryDir dir;
    core::ExperimentSpec spec = psSpec();
    spec.cluster = {};
    spec.training.maxSteps = 1000000;  // runs until the shard dies
    spec.variants = {spec.variants[1]};
    QProcess cli;
    cli.setReadChannel(QProcess::StandardError);  // progress lines come on stderr
    cli.start(kCli, QStringList{"run", writeSpec(dir, spec)} + nodes);
    QVERIFY(cli.waitForStarted(10000));
    QByteArray err;
    QElapsedTimer waited;
    waited.start();
    while (!err.contains("samples/s") && waited.elapsed() < 60000 && cli.waitForReadyRead(1000))
      err += cli.readAllStandardError();
    QVERIFY2(err.contains("samples/s"), err.constData());  // training is under way
    ::kill(static_cast<pid_t>(daemons[1]->process.processId()), SIGKILL);
    QElapsedTimer failing;
    failing.start();
    QVERIFY2(cli.waitForFinished(30000), "the run did not end after its shard died");
    const qint64 ms = failing.elapsed();
    err += cli.readAllStandardError();
    const QString out = QString::fromUtf8(cli.readAllStandardOutput());
    QVERIFY2(ms < 15000, qPrintable(QString("took %1 ms").arg(ms)));
    const auto summary = nlohmann::json::parse(out.trimmed().split('\n').last().toStdString());
    const nlohmann::json& run = summary["runs"][0];
    QCOMPARE(run["status"], nlohmann::json("failed"));
    const std::string error = run["error"].get<std::string>();
    QVERIFY2(error.find(daemons[1]->address.toStdString()) != std::string::npos, error.c_str());
    QVERIFY(cli.exitCode() != 0);
  }
};

QTEST_GUILESS_MAIN(TestParameterServerCli)
#include "test_parameter_server_cli.moc"
