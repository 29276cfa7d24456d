#include <QtTest/QtTest>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/common/check.h"
#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "core/train/strategy_registry.h"
#include "tests/core/spec_samples.h"

using dtlab::core::Activation;
using dtlab::core::ExperimentSpec;
using dtlab::core::InitScheme;
using dtlab::core::LossKind;
using dtlab::core::OptimizerKind;
using dtlab::core::ScheduleKind;
using dtlab::core::SpecError;
using dtlab::core::test::variedSpecs;
using nlohmann::json;

namespace {

const std::string kDefaultSpecPath = DTLAB_SOURCE_DIR "/resources/specs/default.json";

// The SpecError that parsing `text` throws, or nullopt when it parses.
std::optional<SpecError> specErrorOf(const std::string& text) {
  try {
    dtlab::core::parseExperimentSpecText(text);
  } catch (const SpecError& e) {
    return e;
  }
  return std::nullopt;
}

void invalidRow(const char* name, const char* spec, const char* path, const char* phrase) {
  QTest::newRow(name) << QByteArray(spec) << QString(path) << QString(phrase);
}

}  // namespace

class TestSpec : public QObject {
  Q_OBJECT
 private slots:
  void everyShippedExampleLoads() {
    // The examples of resources/specs (the start page's, `dtlab-cli run`'s, the benches'),
    // each as the parser reads it.
    int seen = 0;
    for (const auto& entry :
         std::filesystem::recursive_directory_iterator(DTLAB_SOURCE_DIR "/resources/specs")) {
      if (entry.path().extension() != ".json") continue;
      try {
        dtlab::core::loadExperimentSpec(entry.path().string());
      } catch (const std::exception& e) {
        QFAIL(qPrintable(QString::fromStdString(entry.path().string() + ": " + e.what())));
      }
      ++seen;
    }
    QVERIFY2(seen >= 10, qPrintable(QString::number(seen)));
  }

  void defaultSpecLoads() {
    const ExperimentSpec spec = dtlab::core::loadExperimentSpec(kDefaultSpecPath);
    QCOMPARE(spec.dataset.kind, "gaussian_blobs");
    QCOMPARE(spec.dataset.classes, 10);
    QCOMPARE(spec.dataset.features, 32);
    QCOMPARE(spec.dataset.trainSize, 20000);
    QCOMPARE(spec.dataset.testSize, 2000);
    QCOMPARE(spec.dataset.seed, spec.seed);
    QCOMPARE(spec.model.hidden, (std::vector<int64_t>{128, 128}));
    QCOMPARE(spec.model.activation, Activation::kReLU);
    QCOMPARE(spec.model.loss, LossKind::kCrossEntropy);
    QCOMPARE(spec.optimizer.kind, OptimizerKind::kSgd);
    QCOMPARE(spec.optimizer.lr, 0.05f);
    QCOMPARE(spec.optimizer.momentum, 0.9f);
    QCOMPARE(spec.optimizer.schedule.kind, ScheduleKind::kCosine);
    QVERIFY(spec.optimizer.schedule.warmupSteps > 0);
    // "Short": well under the ~470 steps of three epochs.
    QVERIFY(spec.optimizer.schedule.warmupSteps <= 100);
    QCOMPARE(spec.training.batchSize, 128);
    QCOMPARE(spec.training.epochs, 3);
    QCOMPARE(spec.training.targetAccuracy, std::optional<double>(0.97));
    QCOMPARE(spec.training.evalInterval, 100);
  }

  // `==` compares as written; sameExperiment as DTLab reads a spec: the default kind named or
  // not, settings left to their defaults or written out, a single-precision parameter as the
  // float it rounds to.
  void sameExperimentComparesWhatTheRunReads() {
    ExperimentSpec built;
    built.dataset.kind = "gaussian_blobs";
    built.dataset.parameters.set("separation", 0.1);
    const ExperimentSpec parsed = dtlab::core::parseExperimentSpec(dtlab::core::toJson(built));
    QVERIFY(!(parsed == built));  // the parser writes out every default
    QVERIFY(dtlab::core::sameExperiment(parsed, built));
    ExperimentSpec rounded = built;
    rounded.dataset.parameters.set("separation", static_cast<double>(0.1f));
    rounded.dataset.kind.clear();  // the default kind
    QVERIFY(dtlab::core::sameExperiment(rounded, built));
    ExperimentSpec other = built;
    other.dataset.parameters.set("separation", 0.2);
    QVERIFY(!dtlab::core::sameExperiment(other, built));
    ExperimentSpec variant = built;
    variant.variants[0].settings.set("bucket_kb", int64_t{4096});
    QVERIFY(!dtlab::core::sameExperiment(variant, built));
    variant.variants[0].settings = dtlab::core::defaultVariant().settings;
    QVERIFY(dtlab::core::sameExperiment(variant, built));
  }

  void emptySpecTakesHeaderDefaults() {
    const ExperimentSpec spec = dtlab::core::parseExperimentSpecText("{}");
    ExperimentSpec expected;
    expected.dataset.seed = expected.seed;  // the dataset inherits the spec seed
    QVERIFY(dtlab::core::sameExperiment(spec, expected));
    QVERIFY(!spec.training.targetAccuracy.has_value());
    QVERIFY(!spec.optimizer.scaleLrBaseBatch.has_value());
  }

  void kindDependentDefaults_data() {
    QTest::addColumn<QByteArray>("spec");
    QTest::addColumn<qint64>("classes");
    QTest::addColumn<qint64>("features");
    QTest::addColumn<int>("loss");
    const int ce = static_cast<int>(LossKind::kCrossEntropy);
    const int mse = static_cast<int>(LossKind::kMse);
    QTest::newRow("blobs") << QByteArray(R"({"dataset": {"kind": "gaussian_blobs"}})") << 10LL
                           << 32LL << ce;
    QTest::newRow("spirals") << QByteArray(R"({"dataset": {"kind": "two_spirals"}})") << 2LL << 2LL
                             << ce;
    QTest::newRow("spirals 5 arms")
        << QByteArray(R"({"dataset": {"kind": "two_spirals", "classes": 5}})") << 5LL << 2LL << ce;
    QTest::newRow("checkerboard") << QByteArray(R"({"dataset": {"kind": "checkerboard"}})") << 2LL
                                  << 2LL << ce;
    QTest::newRow("teacher") << QByteArray(R"({"dataset": {"kind": "teacher", "features": 7}})")
                             << 10LL << 7LL << ce;
    QTest::newRow("regression") << QByteArray(R"({"dataset": {"kind": "linear_regression"}})")
                                << 1LL << 32LL << mse;
    QTest::newRow("shapes") << QByteArray(R"({"dataset": {"kind": "shapes"}})") << 10LL << 784LL
                            << ce;
    // A fixed value may be restated: toJson() writes it, and it must read back.
    QTest::newRow("shapes restated")
        << QByteArray(R"({"dataset": {"kind": "shapes", "classes": 10, "features": 784}})") << 10LL
        << 784LL << ce;
  }

  void kindDependentDefaults() {
    QFETCH(QByteArray, spec);
    QFETCH(qint64, classes);
    QFETCH(qint64, features);
    QFETCH(int, loss);
    const ExperimentSpec parsed = dtlab::core::parseExperimentSpecText(spec.toStdString());
    QCOMPARE(parsed.dataset.classes, classes);
    QCOMPARE(parsed.dataset.features, features);
    QCOMPARE(static_cast<int>(parsed.model.loss), loss);
  }

  void adadeltaDefaults() {
    const ExperimentSpec plain =
        dtlab::core::parseExperimentSpecText(R"({"optimizer": {"kind": "adadelta"}})");
    QCOMPARE(plain.optimizer.lr, 1.0f);
    QCOMPARE(plain.optimizer.eps, 1e-6f);
    const ExperimentSpec given = dtlab::core::parseExperimentSpecText(
        R"({"optimizer": {"kind": "adadelta", "lr": 0.5, "eps": 1e-5}})");
    QCOMPARE(given.optimizer.lr, 0.5f);
    QCOMPARE(given.optimizer.eps, 1e-5f);
    const ExperimentSpec adam =
        dtlab::core::parseExperimentSpecText(R"({"optimizer": {"kind": "adam"}})");
    QCOMPARE(adam.optimizer.lr, 0.05f);
    QCOMPARE(adam.optimizer.eps, 1e-8f);
  }

  void datasetSeedFollowsSpecSeed() {
    using dtlab::core::parseExperimentSpecText;
    QCOMPARE(parseExperimentSpecText(R"({"seed": 42})").dataset.seed, 42u);
    QCOMPARE(parseExperimentSpecText(R"({"seed": 42, "dataset": {"seed": 7}})").dataset.seed, 7u);
    QCOMPARE(parseExperimentSpecText(R"({"seed": 18446744073709551615})").seed,
             std::numeric_limits<uint64_t>::max());
  }

  void acceptsLenientButExactNumbers() {
    using dtlab::core::parseExperimentSpecText;
    const ExperimentSpec spec = parseExperimentSpecText(
        R"({"dataset": {"train_size": 5000.0}, "training": {"batch_size": 1e2,
            "target_accuracy": null}, "optimizer": {"scale_lr_base_batch": null},
            "model": {"hidden": []}})");
    QCOMPARE(spec.dataset.trainSize, 5000);
    QCOMPARE(spec.training.batchSize, 100);
    QVERIFY(!spec.training.targetAccuracy.has_value());
    QVERIFY(!spec.optimizer.scaleLrBaseBatch.has_value());
    QVERIFY(spec.model.hidden.empty());
    QCOMPARE(parseExperimentSpecText(R"({"training": {"epochs": 0, "max_steps": 10}})")
                 .training.maxSteps,
             10);
  }

  void rejectsInvalidSpec_data() {
    QTest::addColumn<QByteArray>("spec");
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("phrase");
    // Document shape.
    invalidRow("root array", "[1, 2]", "(json)", "must be a JSON object, got an array");
    invalidRow("root number", "3", "(json)", "must be a JSON object");
    invalidRow("dataset null", R"({"dataset": null})", "dataset",
               "must be a JSON object, got null");
    invalidRow("model string", R"({"model": "mlp"})", "model", R"(got "mlp")");
    invalidRow("schedule array", R"({"optimizer": {"schedule": []}})", "optimizer.schedule",
               "got an empty array");
    invalidRow("nested junk kind", R"({"dataset": {"kind": [[[]]]}})", "dataset.kind",
               "got an array");
    invalidRow("null number", R"({"optimizer": {"lr": null}})", "optimizer.lr",
               "must be a number, got null");
    // Unknown fields.
    invalidRow("typo classes", R"({"dataset": {"clases": 3}})", "dataset.clases",
               "unknown field (did you mean 'classes'?)");
    invalidRow("typo top", R"({"optimiser": {}})", "optimiser",
               "unknown field (did you mean 'optimizer'?)");
    invalidRow("camel case", R"({"training": {"batchSize": 64}})", "training.batchSize",
               "did you mean 'batch_size'?");
    invalidRow("prefix", R"({"optimizer": {"schedule": {"warmup": 10}}})",
               "optimizer.schedule.warmup", "did you mean 'warmup_steps'?");
    invalidRow("unknown far", R"({"zzz": 1})", "zzz",
               "unknown field; known fields: name, seed, repeats, dataset");
    invalidRow("cluster typo", R"({"cluster": {"local_node": 2}})", "cluster.local_node",
               "did you mean 'local_nodes'");
    invalidRow("zero nodes", R"({"cluster": {"local_nodes": 0}})", "cluster.local_nodes",
               "positive");
    invalidRow("node speed", R"({"cluster": {"nodes": [{"speed": 0}]}})", "cluster.nodes[0].speed",
               "(0, 1000]");
    invalidRow("node count", R"({"cluster": {"local_nodes": 2, "nodes": [{}, {}, {}]}})",
               "cluster.nodes", "local_nodes (2)");
    invalidRow("gpu index", R"({"cluster": {"device": "cuda:0"}})", "cluster.device",
               R"(must be "cpu" or "cuda" (the node daemons choose the GPU: dtlab-node --devices)");
    invalidRow("unknown precision", R"({"training": {"precision": "fp16"}})", "training.precision",
               "fp32, tf32, bf16");
    invalidRow("bf16 on cpu", R"({"training": {"precision": "bf16"}})", "training.precision",
               R"("bf16" needs "cluster": {"device": "cuda"}; the CPU backend computes in fp32)");
    invalidRow("unknown strategy", R"({"variants": [{"strategy": "gossip"}]})",
               "variants[0].strategy", "sync_allreduce");
    invalidRow("empty variants", R"({"variants": []})", "variants", "non-empty");
    invalidRow("duplicate variant", R"({"variants": [{}, {}]})", "variants[1].name", "duplicate");
    // Types.
    invalidRow("string for int", R"({"dataset": {"train_size": "big"}})", "dataset.train_size",
               R"(must be an integer, got "big")");
    invalidRow("fraction for int", R"({"dataset": {"train_size": 3.5}})", "dataset.train_size",
               "must be an integer, got 3.5");
    invalidRow("bool for int", R"({"training": {"epochs": true}})", "training.epochs",
               "must be an integer, got true");
    invalidRow("string for float", R"({"optimizer": {"lr": "0.1"}})", "optimizer.lr",
               R"(must be a number, got "0.1")");
    invalidRow("int for bool", R"({"optimizer": {"nesterov": 1}})", "optimizer.nesterov",
               "must be true or false, got 1");
    invalidRow("number for name", R"({"name": 5})", "name", "must be a string, got 5");
    invalidRow("empty name", R"({"name": ""})", "name", "non-empty");
    invalidRow("negative seed", R"({"seed": -1})", "seed",
               "must be a non-negative integer, got -1");
    invalidRow("fraction seed", R"({"seed": 1.5})", "seed", "non-negative integer, got 1.5");
    invalidRow("negative dataset seed", R"({"dataset": {"seed": -7}})", "dataset.seed", "got -7");
    invalidRow("huge float for int", R"({"dataset": {"train_size": 1e30}})", "dataset.train_size",
               "must be at most 9223372036854775807, got 1e+30");
    invalidRow("huge unsigned for int", R"({"training": {"epochs": 18446744073709551615}})",
               "training.epochs", "must be at most");
    invalidRow("float overflow", R"({"optimizer": {"lr": 1e300}})", "optimizer.lr",
               "too large for a 32-bit float");
    // Enums.
    invalidRow("dataset kind", R"({"dataset": {"kind": "blobs"}})", "dataset.kind",
               "must be one of gaussian_blobs, two_spirals, checkerboard, teacher, "
               "linear_regression, shapes, language, copy; got \"blobs\"");
    invalidRow("optimizer kind", R"({"optimizer": {"kind": "sdg"}})", "optimizer.kind",
               "got \"sdg\" (did you mean 'sgd'?)");
    invalidRow("optimizer kind number", R"({"optimizer": {"kind": 3}})", "optimizer.kind",
               "must be one of sgd, adam, adamw, adadelta; got 3");
    invalidRow("activation", R"({"model": {"activation": "sigmoid"}})", "model.activation",
               "relu, gelu, tanh");
    invalidRow("activation case", R"({"model": {"activation": "ReLU"}})", "model.activation",
               "did you mean 'relu'?");
    invalidRow("init", R"({"model": {"init": "glorot"}})", "model.init", "he, xavier");
    invalidRow("loss", R"({"model": {"loss": "l2"}})", "model.loss", "cross_entropy, mse");
    invalidRow("schedule kind", R"({"optimizer": {"schedule": {"kind": "linear"}}})",
               "optimizer.schedule.kind", "constant, step, cosine");
    // Dataset sizes and ranges.
    invalidRow("zero train", R"({"dataset": {"train_size": 0}})", "dataset.train_size",
               "must be a positive integer, got 0");
    invalidRow("negative test", R"({"dataset": {"test_size": -5}})", "dataset.test_size",
               "must be a positive integer, got -5");
    invalidRow("zero classes", R"({"dataset": {"classes": 0}})", "dataset.classes",
               "positive integer");
    invalidRow("one class", R"({"dataset": {"classes": 1}})", "dataset.classes",
               "must be between 2 and 65536 for gaussian_blobs, got 1");
    invalidRow("zero features", R"({"dataset": {"features": 0}})", "dataset.features",
               "positive integer");
    invalidRow("wide features", R"({"dataset": {"features": 70000}})", "dataset.features",
               "at most 65536");
    invalidRow("spiral arms", R"({"dataset": {"kind": "two_spirals", "classes": 9}})",
               "dataset.classes", "between 2 and 8");
    invalidRow("spiral features", R"({"dataset": {"kind": "two_spirals", "features": 3}})",
               "dataset.features", "fixed at 2 for two_spirals");
    invalidRow("checkerboard classes", R"({"dataset": {"kind": "checkerboard", "classes": 3}})",
               "dataset.classes", "fixed at 2 for checkerboard");
    invalidRow("checkerboard features", R"({"dataset": {"kind": "checkerboard", "features": 4}})",
               "dataset.features", "fixed at 2");
    invalidRow("shapes features", R"({"dataset": {"kind": "shapes", "features": 100}})",
               "dataset.features", "fixed at 784 for shapes");
    invalidRow("shapes classes", R"({"dataset": {"kind": "shapes", "classes": 5}})",
               "dataset.classes", "fixed at 10");
    invalidRow("regression classes", R"({"dataset": {"kind": "linear_regression", "classes": 2}})",
               "dataset.classes", "fixed at 1 for linear_regression");
    invalidRow("regression cross entropy",
               R"({"dataset": {"kind": "linear_regression"}, "model": {"loss": "cross_entropy"}})",
               "model.loss", "cross_entropy needs a classification dataset");
    // mse compares an output with a target value each; a classification gives one class.
    invalidRow("classification mse",
               R"({"dataset": {"kind": "checkerboard"}, "model": {"loss": "mse"}})", "model.loss",
               "mse needs a regression dataset's target values");
    invalidRow("negative separation", R"({"dataset": {"separation": -1}})", "dataset.separation",
               "must be >= 0, got -1");
    invalidRow("negative noise", R"({"dataset": {"noise": -0.5}})", "dataset.noise", ">= 0");
    invalidRow("label noise range", R"({"dataset": {"kind": "teacher", "label_noise": 1.5}})",
               "dataset.label_noise", "must be in [0, 1], got 1.5");
    invalidRow("teacher width", R"({"dataset": {"kind": "teacher", "teacher_width": 0}})",
               "dataset.teacher_width", "positive integer");
    invalidRow("huge teacher",
               R"({"dataset": {"kind": "teacher", "teacher_width": 65536, "teacher_depth": 3}})",
               "dataset.teacher_width", "above the limit of 268435456");
    invalidRow("turns zero", R"({"dataset": {"kind": "two_spirals", "turns": 0}})", "dataset.turns",
               "must be in (0, 100]");
    invalidRow("grid one", R"({"dataset": {"kind": "checkerboard", "grid_size": 1}})",
               "dataset.grid_size", "at least 2");
    invalidRow("turns on blobs", R"({"dataset": {"turns": 2}})", "dataset.turns",
               "only used by two_spirals, not by gaussian_blobs");
    invalidRow("grid on blobs", R"({"dataset": {"grid_size": 8}})", "dataset.grid_size",
               "only used by checkerboard");
    invalidRow("label noise on blobs", R"({"dataset": {"label_noise": 0.1}})",
               "dataset.label_noise", "only used by teacher");
    invalidRow("separation on teacher", R"({"dataset": {"kind": "teacher", "separation": 2}})",
               "dataset.separation", "only used by gaussian_blobs");
    invalidRow(
        "memory cap", R"({"dataset": {"train_size": 40000000}})", "dataset.train_size",
        "4.9 GiB ((train_size + test_size) x (features + targets) x 4 bytes), above the cap of "
        "4.0 GiB");
    invalidRow("memory cap overflow",
               R"({"dataset": {"train_size": 9223372036854775807, "features": 65536}})",
               "dataset.train_size", "above the cap");
    // Model.
    invalidRow("negative width", R"({"model": {"hidden": [128, -3]}})", "model.hidden[1]",
               "must be a positive integer, got -3");
    invalidRow("fractional width", R"({"model": {"hidden": [3.5]}})", "model.hidden[0]",
               "must be an integer, got 3.5");
    invalidRow("wide layer", R"({"model": {"hidden": [65537]}})", "model.hidden[0]",
               "must be at most 65536, got 65537");
    invalidRow("deep model", R"({"model": {"hidden": [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}})",
               "model.hidden", "at most 16 layers, got 17");
    invalidRow("huge model", R"({"model": {"hidden": [65536, 65536]}})", "model.hidden",
               "the model would have 4297850890 parameters, above the limit of 268435456");
    invalidRow("hidden not array", R"({"model": {"hidden": 128}})", "model.hidden",
               "must be an array");
    // Optimizer.
    invalidRow("negative lr", R"({"optimizer": {"lr": -1}})", "optimizer.lr",
               "must be > 0, got -1");
    invalidRow("zero lr", R"({"optimizer": {"lr": 0}})", "optimizer.lr", "must be > 0, got 0");
    invalidRow("tiny lr", R"({"optimizer": {"lr": 1e-50}})", "optimizer.lr",
               "(0 as a 32-bit float)");
    invalidRow("momentum one", R"({"optimizer": {"momentum": 1.0}})", "optimizer.momentum",
               "must be in [0, 1), got 1.0");
    invalidRow("momentum rounds to one", R"({"optimizer": {"momentum": 0.99999999}})",
               "optimizer.momentum", "(1 as a 32-bit float)");
    invalidRow("negative momentum", R"({"optimizer": {"momentum": -0.1}})", "optimizer.momentum",
               "[0, 1)");
    invalidRow("beta1", R"({"optimizer": {"kind": "adam", "beta1": 1}})", "optimizer.beta1",
               "must be in [0, 1), got 1");
    invalidRow("beta2", R"({"optimizer": {"kind": "adamw", "beta2": -0.5}})", "optimizer.beta2",
               "[0, 1)");
    invalidRow("rho", R"({"optimizer": {"kind": "adadelta", "rho": 1}})", "optimizer.rho",
               "[0, 1)");
    invalidRow("eps zero", R"({"optimizer": {"kind": "adam", "eps": 0}})", "optimizer.eps",
               "must be > 0");
    invalidRow("negative weight decay", R"({"optimizer": {"weight_decay": -0.1}})",
               "optimizer.weight_decay", ">= 0");
    invalidRow("nesterov without momentum", R"({"optimizer": {"momentum": 0, "nesterov": true}})",
               "optimizer.nesterov", "needs momentum > 0");
    invalidRow("momentum on adam", R"({"optimizer": {"kind": "adam", "momentum": 0.5}})",
               "optimizer.momentum", "only used by sgd, not by adam");
    invalidRow("rho on sgd", R"({"optimizer": {"rho": 0.5}})", "optimizer.rho",
               "only used by adadelta");
    invalidRow("betas on sgd", R"({"optimizer": {"beta2": 0.98}})", "optimizer.beta2",
               "only used by adam and adamw");
    invalidRow("scale base zero", R"({"optimizer": {"scale_lr_base_batch": 0}})",
               "optimizer.scale_lr_base_batch", "positive integer");
    invalidRow("scale base fraction", R"({"optimizer": {"scale_lr_base_batch": 2.5}})",
               "optimizer.scale_lr_base_batch", "must be an integer");
    invalidRow("gamma zero", R"({"optimizer": {"schedule": {"kind": "step", "gamma": 0}}})",
               "optimizer.schedule.gamma", "must be in (0, 1], got 0");
    invalidRow("step size zero", R"({"optimizer": {"schedule": {"kind": "step", "step_size": 0}}})",
               "optimizer.schedule.step_size", "positive integer");
    invalidRow("negative warmup", R"({"optimizer": {"schedule": {"warmup_steps": -1}}})",
               "optimizer.schedule.warmup_steps", "non-negative integer, got -1");
    invalidRow("min lr above lr",
               R"({"optimizer": {"lr": 0.05, "schedule": {"kind": "cosine", "min_lr": 0.1}}})",
               "optimizer.schedule.min_lr", "must not exceed optimizer.lr (0.05), got 0.1");
    invalidRow("step size on constant", R"({"optimizer": {"schedule": {"step_size": 50}}})",
               "optimizer.schedule.step_size", "only used by the step and cosine schedules");
    invalidRow("gamma on cosine",
               R"({"optimizer": {"schedule": {"kind": "cosine", "gamma": 0.5}}})",
               "optimizer.schedule.gamma", "only used by the step schedule, not by cosine");
    invalidRow("min lr on constant", R"({"optimizer": {"schedule": {"min_lr": 0.01}}})",
               "optimizer.schedule.min_lr", "only used by the cosine schedule");
    // Training.
    invalidRow("zero batch", R"({"training": {"batch_size": 0}})", "training.batch_size",
               "must be a positive integer, got 0");
    invalidRow("batch above train",
               R"({"dataset": {"train_size": 1000}, "training": {"batch_size": 1001}})",
               "training.batch_size", "must not exceed dataset.train_size (1000), got 1001");
    invalidRow("negative epochs", R"({"training": {"epochs": -1}})", "training.epochs",
               "non-negative integer");
    invalidRow("negative steps", R"({"training": {"max_steps": -1}})", "training.max_steps",
               "non-negative integer");
    invalidRow("negative seconds", R"({"training": {"max_seconds": -1}})", "training.max_seconds",
               "must be >= 0, got -1");
    invalidRow("target zero", R"({"training": {"target_accuracy": 0}})", "training.target_accuracy",
               "must be in (0, 1], got 0");
    invalidRow("target above one", R"({"training": {"target_accuracy": 1.5}})",
               "training.target_accuracy", "(0, 1]");
    invalidRow("zero eval interval", R"({"training": {"eval_interval": 0}})",
               "training.eval_interval", "positive integer");
    invalidRow("negative checkpoint interval", R"({"training": {"checkpoint_every": -5}})",
               "training.checkpoint_every", "");
    invalidRow("no checkpoint kept", R"({"training": {"checkpoints_kept": 0}})",
               "training.checkpoints_kept", "");
    invalidRow("checkpoint seconds as text", R"({"training": {"checkpoint_seconds": "1m"}})",
               "training.checkpoint_seconds", "");
    invalidRow("negative threads", R"({"training": {"threads": -1}})", "training.threads",
               "non-negative integer, got -1");
    invalidRow("many threads", R"({"training": {"threads": 257}})", "training.threads",
               "must be at most 256, got 257");
    invalidRow("no stopping condition",
               R"({"training": {"epochs": 0, "max_steps": 0, "max_seconds": 0,
                                "target_accuracy": 0.9}})",
               "training", "no stopping condition");
    // Syntax.
    invalidRow("trailing comma", "{\"seed\": 1,\n}", "(json)", "line 2, column 1");
    invalidRow("empty text", "", "(json)", "invalid JSON");
    invalidRow("number overflow", R"({"seed": 1e400})", "(json)", "number overflow");
    invalidRow("bad utf8", "{\"name\": \"\xff\"}", "(json)", "invalid JSON");
    invalidRow("duplicate key", R"({"optimizer": {"lr": 0.1, "lr": 0.2}})", "optimizer.lr",
               "duplicate key");
    invalidRow("duplicate key in array", R"({"model": {"hidden": [1, {"a": 1, "a": 2}]}})",
               "model.hidden[1].a", "duplicate key");
  }

  void rejectsInvalidSpec() {
    QFETCH(QByteArray, spec);
    QFETCH(QString, path);
    QFETCH(QString, phrase);
    const std::optional<SpecError> error = specErrorOf(spec.toStdString());
    QVERIFY2(error.has_value(), "the spec was accepted");
    QCOMPARE(QString::fromStdString(error->path()), path);
    const QString message = QString::fromStdString(error->what());
    QVERIFY2(message.contains(phrase), qPrintable(message));
    QCOMPARE(message, QString::fromStdString(error->path() + ": " + error->reason()));
  }

  void deeplyNestedInputIsRejected() {
    const int depth = 100000;
    const std::string deep = std::string(depth, '[') + std::string(depth, ']');
    std::optional<SpecError> error = specErrorOf(deep);
    QVERIFY(error.has_value());
    QCOMPARE(error->path(), std::string("(json)"));
    error = specErrorOf(R"({"dataset": )" + deep + "}");
    QVERIFY(error.has_value());
    QCOMPARE(error->path(), std::string("dataset"));
    error = specErrorOf(std::string(depth, '['));  // unterminated
    QVERIFY(error.has_value());
    QCOMPARE(error->path(), std::string("(json)"));
  }

  void loadNamesTheFile() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string missing = dir.filePath("missing.json").toStdString();
    try {
      dtlab::core::loadExperimentSpec(missing);
      QFAIL("loaded a missing file");
    } catch (const SpecError&) {
      QFAIL("a missing file is not a spec error");
    } catch (const dtlab::Error& e) {
      QVERIFY2(std::string(e.what()).find(missing) != std::string::npos, e.what());
    }
    QVERIFY_THROWS_EXCEPTION(dtlab::Error,
                             dtlab::core::loadExperimentSpec(dir.path().toStdString()));

    const std::string bad = dir.filePath("spec.json").toStdString();
    std::ofstream(bad) << R"({"optimizer": {"lr": -1}})";
    try {
      dtlab::core::loadExperimentSpec(bad);
      QFAIL("loaded an invalid spec");
    } catch (const SpecError& e) {
      QCOMPARE(std::string(e.what()), bad + ": optimizer.lr: must be > 0, got -1");
      QCOMPARE(e.path(), std::string("optimizer.lr"));
      QCOMPARE(e.reason(), std::string("must be > 0, got -1"));
    }
    std::ofstream(bad) << "{\n  \"seed\": 1\n  \"name\": \"x\"\n}";
    try {
      dtlab::core::loadExperimentSpec(bad);
      QFAIL("loaded malformed JSON");
    } catch (const SpecError& e) {
      const std::string message = e.what();
      QVERIFY2(message.starts_with(bad + ": (json): invalid JSON"), e.what());
      QVERIFY2(message.find("line 3") != std::string::npos, e.what());
    }
    // A NUL ends the JSON parser's input: what follows it is refused, not dropped.
    {
      std::ofstream out(bad, std::ios::binary | std::ios::trunc);
      out << "{\"seed\": 1}\n";
      out.put('\0');
      out << "{\"optimizer\": {\"lr\": -1}}";
    }
    try {
      dtlab::core::loadExperimentSpec(bad);
      QFAIL("loaded a spec with a NUL byte");
    } catch (const SpecError& e) {
      QCOMPARE(std::string(e.what()),
               bad +
                   ": (json): a NUL byte at offset 12 (line 2): a spec is JSON text, which "
                   "holds none");
    }
  }

  void roundTrip() {
    for (const ExperimentSpec& spec : variedSpecs()) {
      const json document = dtlab::core::toJson(spec);
      const ExperimentSpec fromJson = dtlab::core::parseExperimentSpec(document);
      QVERIFY2(dtlab::core::sameExperiment(fromJson, spec), document.dump(2).c_str());
      const ExperimentSpec fromText = dtlab::core::parseExperimentSpecText(document.dump(2));
      QVERIFY2(dtlab::core::sameExperiment(fromText, spec), document.dump(2).c_str());
      QVERIFY(dtlab::core::toJson(fromText) == document);
    }
    const ExperimentSpec defaults = dtlab::core::loadExperimentSpec(kDefaultSpecPath);
    QVERIFY(dtlab::core::parseExperimentSpec(dtlab::core::toJson(defaults)) == defaults);
  }

  void toJsonIsCompleteAndReadable() {
    const json document = dtlab::core::toJson(ExperimentSpec{});
    QCOMPARE(document.size(), 9u);
    QCOMPARE(document["repeats"], json(1));
    QCOMPARE(document["cluster"].size(), 4u);
    QCOMPARE(document["variants"].size(), 1u);
    QCOMPARE(document["variants"][0]["strategy"], json("sync_allreduce"));
    // The fields of every dataset and the default kind's own parameters (separation, noise).
    QCOMPARE(document["dataset"].size(), 8u);
    QCOMPARE(document["dataset"]["separation"].dump(), std::string("4.0"));
    // The fields of every model and the default kind's own settings (an mlp has none).
    QCOMPARE(document["model"].size(), 5u);
    QCOMPARE(document["model"]["kind"], json("mlp"));
    QCOMPARE(document["optimizer"].size(), 11u);
    QCOMPARE(document["optimizer"]["schedule"].size(), 5u);
    QCOMPARE(document["training"].size(), 12u);
    QCOMPARE(document["training"]["precision"], json("fp32"));
    QCOMPARE(document["training"]["checkpoint_every"], json(0));  // no checkpoints by default
    QCOMPARE(document["training"]["checkpoints_kept"], json(2));
    QVERIFY(document["training"]["target_accuracy"].is_null());
    // Floats are written in their shortest form, not as the widened double.
    QCOMPARE(document["optimizer"]["lr"].dump(), std::string("0.05"));
    QCOMPARE(document["optimizer"]["beta2"].dump(), std::string("0.999"));
  }

  void enumNames() {
    QCOMPARE(std::string(dtlab::core::toString(Activation::kGELU)), std::string("gelu"));
    QCOMPARE(std::string(dtlab::core::toString(InitScheme::kXavier)), std::string("xavier"));
    QCOMPARE(std::string(dtlab::core::toString(LossKind::kCrossEntropy)),
             std::string("cross_entropy"));
    QCOMPARE(std::string(dtlab::core::toString(OptimizerKind::kAdamW)), std::string("adamw"));
    QCOMPARE(std::string(dtlab::core::toString(ScheduleKind::kStep)), std::string("step"));
  }
};

QTEST_APPLESS_MAIN(TestSpec)
#include "test_spec.moc"
