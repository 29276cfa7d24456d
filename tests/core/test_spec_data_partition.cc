// The spec's training.data_partition: its three kinds and defaults, the errors a user sees for
// a wrong value (naming the field), the round trip through toJson(), and the combinations
// that cannot work (dirichlet on a regression dataset, speed_proportional on per-worker
// shards).
#include <QtTest/QtTest>

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"

using dtlab::core::DataPartitionKind;
using dtlab::core::ExperimentSpec;
using dtlab::core::SpecError;
using nlohmann::json;

namespace {

json withPartition(json partition,
                   json variants = json::array({{{"strategy", "sync_allreduce"}}})) {
  return {{"training", {{"data_partition", std::move(partition)}}},
          {"cluster", {{"local_nodes", 4}}},
          {"variants", std::move(variants)}};
}

std::optional<SpecError> errorOf(const json& document) {
  try {
    dtlab::core::parseExperimentSpec(document);
  } catch (const SpecError& e) {
    return e;
  }
  return std::nullopt;
}

}  // namespace

class TestSpecDataPartition : public QObject {
  Q_OBJECT
 private slots:
  void absentMeansSharedAsBefore() {
    const ExperimentSpec spec = dtlab::core::parseExperimentSpec(json::object());
    QCOMPARE(spec.training.dataPartition.kind, DataPartitionKind::kShared);
    QCOMPARE(dtlab::core::parseExperimentSpec(withPartition({{"kind", "shared"}})).training,
             spec.training);
    // Written out, the default is explicit, and reads back.
    const json written = dtlab::core::toJson(spec)["training"]["data_partition"];
    QCOMPARE(written, json({{"kind", "shared"}}));
  }

  void kindsAndAlpha() {
    const ExperimentSpec iid = dtlab::core::parseExperimentSpec(withPartition({{"kind", "iid"}}));
    QCOMPARE(iid.training.dataPartition.kind, DataPartitionKind::kIid);
    const ExperimentSpec skew =
        dtlab::core::parseExperimentSpec(withPartition({{"kind", "dirichlet"}, {"alpha", 0.3}}));
    QCOMPARE(skew.training.dataPartition.kind, DataPartitionKind::kDirichlet);
    QCOMPARE(skew.training.dataPartition.alpha, 0.3);
    const ExperimentSpec byDefault =
        dtlab::core::parseExperimentSpec(withPartition({{"kind", "dirichlet"}}));
    QCOMPARE(byDefault.training.dataPartition.alpha, 0.5);
    QCOMPARE(std::string(dtlab::core::toString(DataPartitionKind::kDirichlet)),
             std::string("dirichlet"));
  }

  void roundTrip_data() {
    QTest::addColumn<QString>("partition");
    QTest::newRow("shared") << R"({"kind": "shared"})";
    QTest::newRow("iid") << R"({"kind": "iid"})";
    QTest::newRow("dirichlet 0.1") << R"({"kind": "dirichlet", "alpha": 0.1})";
    QTest::newRow("dirichlet tiny") << R"({"kind": "dirichlet", "alpha": 1e-300})";
    QTest::newRow("dirichlet default") << R"({"kind": "dirichlet"})";
  }
  void roundTrip() {
    QFETCH(QString, partition);
    const json document = withPartition(json::parse(partition.toStdString()),
                                        json::array({{{"strategy", "sync_allreduce"}},
                                                     {{"strategy", "async_ps"}, {"ps_shards", 2}},
                                                     {{"strategy", "local_sgd"}, {"period", 8}}}));
    const ExperimentSpec spec = dtlab::core::parseExperimentSpec(document);
    const json written = dtlab::core::toJson(spec);
    QCOMPARE(dtlab::core::parseExperimentSpec(written), spec);
    QCOMPARE(dtlab::core::parseExperimentSpecText(written.dump(2)), spec);
    // alpha is written only where it is read.
    QCOMPARE(written["training"]["data_partition"].contains("alpha"),
             spec.training.dataPartition.kind == DataPartitionKind::kDirichlet);
  }

  void invalidValuesNameTheField_data() {
    QTest::addColumn<QString>("document");
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("reason");
    QTest::newRow("zero alpha")
        << R"({"training": {"data_partition": {"kind": "dirichlet", "alpha": 0}}})"
        << "training.data_partition.alpha"
        << "must be > 0, got 0";
    QTest::newRow("negative alpha")
        << R"({"training": {"data_partition": {"kind": "dirichlet", "alpha": -0.5}}})"
        << "training.data_partition.alpha"
        << "must be > 0, got -0.5";
    QTest::newRow("alpha as text")
        << R"({"training": {"data_partition": {"kind": "dirichlet", "alpha": "0.3"}}})"
        << "training.data_partition.alpha"
        << "must be a number";
    QTest::newRow("alpha without dirichlet")
        << R"({"training": {"data_partition": {"kind": "iid", "alpha": 0.3}}})"
        << "training.data_partition.alpha"
        << "applies only to \"kind\": \"dirichlet\"";
    QTest::newRow("alpha without kind") << R"({"training": {"data_partition": {"alpha": 0.3}}})"
                                        << "training.data_partition.alpha"
                                        << "applies only to";
    QTest::newRow("unknown kind") << R"({"training": {"data_partition": {"kind": "dirichlett"}}})"
                                  << "training.data_partition.kind"
                                  << "did you mean 'dirichlet'?";
    QTest::newRow("unknown field")
        << R"({"training": {"data_partition": {"kind": "dirichlet", "alpah": 0.3}}})"
        << "training.data_partition.alpah"
        << "did you mean 'alpha'?";
    QTest::newRow("a string for the object") << R"({"training": {"data_partition": "iid"}})"
                                             << "training.data_partition"
                                             << "must be a JSON object";
    QTest::newRow("dirichlet on regression") << R"({"dataset": {"kind": "linear_regression"},
              "training": {"data_partition": {"kind": "dirichlet"}}})"
                                             << "training.data_partition"
                                             << "needs a classification dataset";
  }
  void invalidValuesNameTheField() {
    QFETCH(QString, document);
    QFETCH(QString, path);
    QFETCH(QString, reason);
    try {
      dtlab::core::parseExperimentSpecText(document.toStdString());
      QFAIL("accepted");
    } catch (const SpecError& e) {
      QCOMPARE(QString::fromStdString(e.path()), path);
      QVERIFY2(QString::fromStdString(e.reason()).contains(reason), e.what());
    }
  }

  void iidOnRegressionIsFine() {
    const ExperimentSpec spec = dtlab::core::parseExperimentSpecText(
        R"({"dataset": {"kind": "linear_regression"},
            "training": {"data_partition": {"kind": "iid"}}})");
    QCOMPARE(spec.training.dataPartition.kind, DataPartitionKind::kIid);
  }

  // Slices of a global batch need the whole set to draw the batch from.
  void speedProportionalNeedsTheSharedSet() {
    const json variants =
        json::array({{{"strategy", "async_ps"}},
                     {{"strategy", "sync_allreduce"}, {"partition", "speed_proportional"}}});
    const std::optional<SpecError> e = errorOf(withPartition({{"kind", "iid"}}, variants));
    QVERIFY(e.has_value());
    QCOMPARE(e->path(), std::string("variants[1].partition"));
    QVERIFY2(e->reason().find("needs training.data_partition \"shared\"") != std::string::npos,
             e->what());
    QVERIFY2(e->reason().find("\"iid\"") != std::string::npos, e->what());
    // With the shared set it is what it always was.
    QVERIFY(!errorOf(withPartition({{"kind", "shared"}}, variants)).has_value());
    QVERIFY(!errorOf({{"cluster", {{"local_nodes", 2}}}, {"variants", variants}}).has_value());
  }

  // The example the README measures: Dirichlet shards under the three strategies it compares.
  void theNoniidExampleParses() {
    const ExperimentSpec spec =
        dtlab::core::loadExperimentSpec(DTLAB_SOURCE_DIR "/resources/specs/noniid.json");
    QCOMPARE(spec.training.dataPartition.kind, DataPartitionKind::kDirichlet);
    QCOMPARE(spec.training.dataPartition.alpha, 0.1);
    QCOMPARE(spec.cluster.localNodes, int64_t{4});
    QCOMPARE(spec.variants.size(), std::size_t{3});
    QCOMPARE(dtlab::core::parseExperimentSpec(dtlab::core::toJson(spec)), spec);
  }

  // hybrid runs sync_allreduce and async_ps, which both draw from the worker's shard.
  void hybridTrainsOnShardsToo() {
    QVERIFY(
        !errorOf(withPartition({{"kind", "dirichlet"}}, json::array({{{"strategy", "hybrid"}}})))
             .has_value());
  }
};

QTEST_GUILESS_MAIN(TestSpecDataPartition)
#include "test_spec_data_partition.moc"
