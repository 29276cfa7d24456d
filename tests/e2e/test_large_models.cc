// Models of ordinary size through real daemons: every strategy, both hybrid policies among them,
// trains a 20 M-parameter MLP (80 MB of parameters, 160 MB with momentum) on two local nodes
// with checkpoints on, where one message carries 4 MiB: checkpoints, records of pushes and the
// hybrid's hand-over travel in parts. Every run completes, keeps its checkpoints, and no event
// says something was dropped.
#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include "core/store/project_store.h"
#include "tests/e2e/e2e_support.h"

using namespace dtlab;

class TestLargeModels : public QObject {
  Q_OBJECT
 private slots:
  void everyStrategyTrainsATwentyMillionParameterModel() {
    QTemporaryDir dir;
    // 64 features, 4608 and 4352 wide: 64*4608 + 4608*4352 + 4352*4 weights and the biases.
    const nlohmann::json spec = {{"name", "large"},
                                 {"seed", 5},
                                 {"dataset",
                                  {{"kind", "gaussian_blobs"},
                                   {"train_size", 1024},
                                   {"test_size", 64},
                                   {"classes", 4},
                                   {"features", 64}}},
                                 {"model", {{"hidden", {4608, 4352}}}},
                                 {"optimizer", {{"kind", "sgd"}, {"lr", 0.01}, {"momentum", 0.9}}},
                                 {"training",
                                  {{"batch_size", 16},
                                   {"epochs", 0},
                                   {"max_steps", 8},
                                   {"eval_interval", 4},
                                   {"checkpoint_every", 3},
                                   {"checkpoints_kept", 1}}},
                                 {"cluster", {{"local_nodes", 2}}},
                                 {"variants",
                                  {{{"name", "sync"}, {"strategy", "sync_allreduce"}},
                                   {{"name", "async"}, {"strategy", "async_ps"}},
                                   {{"name", "ssp"}, {"strategy", "ssp"}, {"staleness", 2}},
                                   {{"name", "local"}, {"strategy", "local_sgd"}, {"period", 2}},
                                   {{"name", "then_async"},
                                    {"strategy", "hybrid"},
                                    {"policy", "sync_then_async"},
                                    {"switch_at", 0.5}},
                                   {{"name", "adaptive"},
                                    {"strategy", "hybrid"},
                                    {"policy", "adaptive"},
                                    {"straggler_ratio", 1.01},
                                    {"window", 2}}}}};
    QFile file(dir.filePath("large.json"));
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(QByteArray::fromStdString(spec.dump()));
    file.close();
    const QString project = dir.filePath("large.dtlab");
    const e2e::Outcome o =
        e2e::cli({"run", dir.filePath("large.json"), "--quiet", "--project", project}, 540000);
    const nlohmann::json out = e2e::lastJson(o.out);
    QVERIFY2(out.contains("runs"), qPrintable(o.err.right(2000)));
    const nlohmann::json& runs = out.at("runs");
    QCOMPARE(runs.size(), std::size_t{6});
    for (const nlohmann::json& run : runs) {
      qInfo("%s: %s in %.1f s, %s steps", run.at("name").get<std::string>().c_str(),
            run.at("status").get<std::string>().c_str(), run.at("wall_s").get<double>(),
            run.at("steps").dump().c_str());
      QVERIFY2(run.at("status") == "completed",
               qPrintable(QString::fromStdString(run.dump()).left(1500)));
    }
    QCOMPARE(o.exitCode, 0);

    auto store = core::ProjectStore::open(project.toStdString(), true);
    const auto records = store->runs();
    QCOMPARE(records.size(), std::size_t{6});
    for (const core::RunRecord& run : records) {
      for (const core::RunEvent& e : store->events(run.id))
        QVERIFY2(e.kind != core::kCheckpointNotKeptEvent, e.detail.c_str());
      // Every strategy but local_sgd keeps checkpoints: one kept (checkpoints_kept), of the
      // parameters and their momentum, 160 MB and more.
      const auto kept = store->checkpoints(run.id);
      QCOMPARE(kept.size(), run.strategy == "local_sgd" ? std::size_t{0} : std::size_t{1});
      for (const core::CheckpointInfo& c : kept)
        QVERIFY2(c.bytes > 160000000, (run.name + ": " + std::to_string(c.bytes)).c_str());
    }
  }
};

QTEST_GUILESS_MAIN(TestLargeModels)
#include "test_large_models.moc"
