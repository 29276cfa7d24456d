// Training on the GPU against the CPU: one worker, synchronous or through the parameter
// server, follows the same accuracy curve on both devices; tf32 and bf16 follow fp32's.
// Needs a GPU: without one (or in a build without CUDA) the cases skip with the reason.
#include <QtTest/QtTest>

#include <cmath>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/metrics/metrics.h"
#include "core/train/local_trainer.h"
#include "tests/gpu/gpu_available.h"

using namespace dtlab;
using namespace dtlab::core;

namespace {

struct Curve : MetricSink {
  void onStep(const StepMetrics& m) override { losses.push_back(m.loss); }
  void onEval(const EvalMetrics& m) override { evals.push_back(m); }
  std::vector<double> losses;
  std::vector<EvalMetrics> evals;
};

ExperimentSpec smallSpec() {
  ExperimentSpec spec;
  spec.seed = 11;
  spec.dataset.seed = 11;
  spec.dataset.kind = "teacher";
  spec.dataset.trainSize = 8192;
  spec.dataset.testSize = 2048;
  spec.dataset.features = 32;
  spec.model.hidden = {256, 256};
  spec.model.activation = Activation::kGELU;
  spec.training.batchSize = 128;
  spec.training.epochs = 0;
  spec.training.maxSteps = 120;
  spec.training.evalInterval = 20;
  spec.training.threads = 1;
  return spec;
}

}  // namespace

class TestCudaTraining : public QObject {
  Q_OBJECT

 private slots:
  // One worker on the GPU follows the CPU's curve: synchronous, and through the parameter
  // server (whose GPU replica trains through a host mirror of its weights).
  void oneGpuFollowsTheCpuCurve_data() {
    QTest::addColumn<QString>("strategy");
    QTest::newRow("sync_allreduce") << QString("sync_allreduce");
    QTest::newRow("async_ps") << QString("async_ps");
  }
  void oneGpuFollowsTheCpuCurve() {
    SKIP_WITHOUT_GPU();
    QFETCH(QString, strategy);
    ExperimentSpec spec = smallSpec();
    spec.variants[0].strategy = strategy.toStdString();
    Curve cpu, gpu;
    LocalTrainOptions onCpu, onGpu;
    onGpu.device = "cuda:0";
    const RunSummary a = trainLocal(spec, onCpu, &cpu);
    const RunSummary b = trainLocal(spec, onGpu, &gpu);
    QVERIFY2(a.status == RunStatus::kCompleted, a.error.c_str());
    QVERIFY2(b.status == RunStatus::kCompleted, b.error.c_str());
    QCOMPARE(b.steps, a.steps);
    QCOMPARE(gpu.evals.size(), cpu.evals.size());
    QVERIFY(cpu.evals.size() >= 5);
    // The first step's loss (same weights, same batch) agrees closely; later steps drift by
    // float rounding, so the curve is compared with a tolerance that still tells learning
    // from not learning (accuracy goes from ~0.1 to well above).
    QVERIFY2(std::abs(gpu.losses.front() - cpu.losses.front()) <= 1e-4 * cpu.losses.front(),
             qPrintable(QString("%1 vs %2").arg(gpu.losses.front()).arg(cpu.losses.front())));
    for (std::size_t i = 0; i < cpu.evals.size(); ++i) {
      QCOMPARE(gpu.evals[i].step, cpu.evals[i].step);
      QVERIFY2(std::abs(gpu.evals[i].testAccuracy - cpu.evals[i].testAccuracy) <= 0.02,
               qPrintable(QString("step %1: accuracy %2 on the GPU, %3 on the CPU")
                              .arg(cpu.evals[i].step)
                              .arg(gpu.evals[i].testAccuracy)
                              .arg(cpu.evals[i].testAccuracy)));
    }
    QVERIFY(cpu.evals.back().testAccuracy > cpu.evals.front().testAccuracy + 0.05);
    // One synchronous worker neither communicates nor waits: its steps are compute, on the GPU
    // as on the CPU. (Timed when the kernels were queued, not when the GPU had run them, the
    // first H200 run reported 0.37 for a GPU 94% busy.)
    if (strategy == "sync_allreduce")
      QVERIFY2(b.meanUtilization > 0.8 && a.meanUtilization > 0.8,
               qPrintable(QString("utilization %1 on the GPU, %2 on the CPU")
                              .arg(b.meanUtilization)
                              .arg(a.meanUtilization)));
  }

  // tf32 and bf16 train as FP32 does, to within what their rounding moves the curve.
  void reducedPrecisionFollowsTheFp32Curve() {
    SKIP_WITHOUT_GPU();
    LocalTrainOptions onGpu;
    onGpu.device = "cuda:0";
    Curve fp32;
    const RunSummary base = trainLocal(smallSpec(), onGpu, &fp32);
    QVERIFY2(base.status == RunStatus::kCompleted, base.error.c_str());
    for (const Precision precision : {Precision::kTf32, Precision::kBf16}) {
      ExperimentSpec spec = smallSpec();
      spec.cluster.device = "cuda";
      spec.training.precision = precision;
      Curve curve;
      const RunSummary s = trainLocal(spec, onGpu, &curve);
      QVERIFY2(s.status == RunStatus::kCompleted, s.error.c_str());
      QCOMPARE(curve.evals.size(), fp32.evals.size());
      const double first = fp32.losses.front();
      QVERIFY2(std::abs(curve.losses.front() - first) <= 2e-2 * first,
               qPrintable(QString("%1: first loss %2 vs %3")
                              .arg(toString(precision))
                              .arg(curve.losses.front())
                              .arg(first)));
      for (std::size_t i = 0; i < fp32.evals.size(); ++i)
        QVERIFY2(std::abs(curve.evals[i].testAccuracy - fp32.evals[i].testAccuracy) <= 0.04,
                 qPrintable(QString("%1, step %2: accuracy %3 vs %4 in fp32")
                                .arg(toString(precision))
                                .arg(fp32.evals[i].step)
                                .arg(curve.evals[i].testAccuracy)
                                .arg(fp32.evals[i].testAccuracy)));
    }
  }
};

QTEST_APPLESS_MAIN(TestCudaTraining)
#include "test_cuda_training.moc"
