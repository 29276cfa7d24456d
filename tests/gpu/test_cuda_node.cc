// dtlab-node and GPUs: --devices cuda:N[,cuda:M...] is checked when the daemon starts and
// reported by GetInfo; a run with cluster.device "cuda" trains on that GPU with gpu_util and
// gpu_mem_bytes sampled (on each of a daemon's GPUs, one rank each, given two); a CPU daemon
// refuses such a run, naming the flag. The cases that need a GPU skip
// without one, saying why; the others run everywhere.
#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/metrics/metrics.h"
#include "core/spec/experiment_spec.h"
#include "remote/cluster/local_cluster.h"
#include "remote/coordinator/coordinator.h"
#include "tests/gpu/gpu_available.h"

using namespace dtlab;

namespace {

const std::string kNode = DTLAB_BINARY_DIR "/app/dtlab-node";

core::ExperimentSpec cudaSpec(int64_t steps) {
  core::ExperimentSpec spec;
  spec.seed = 3;
  spec.dataset.kind = "teacher";
  spec.dataset.trainSize = 16384;
  spec.dataset.testSize = 1024;
  spec.dataset.features = 64;
  spec.dataset.seed = 3;
  spec.model.hidden = {1024, 1024};
  spec.training.batchSize = 512;
  spec.training.epochs = 0;
  spec.training.maxSteps = steps;
  spec.training.evalInterval = 50;
  spec.cluster.device = "cuda";
  return spec;
}

struct NodeSamples : core::MetricSink {
  void onNode(const core::NodeMetrics& m) override {
    std::lock_guard<std::mutex> lock(mutex);
    samples.push_back(m);
  }
  std::mutex mutex;
  std::vector<core::NodeMetrics> samples;
};

}  // namespace

class TestCudaNode : public QObject {
  Q_OBJECT

 private slots:
  // Runs everywhere: the coordinator names every node without a GPU before any job starts
  // (tests/remote/test_node checks the daemon's own refusal).
  void cpuDaemonRefusesCudaRuns() {
    remote::LocalCluster cluster(kNode, std::vector<remote::LocalNodeOptions>(2));
    remote::Coordinator coordinator(cluster.addresses(), {});
    coordinator.connect();
    try {
      coordinator.run(cudaSpec(5), 0, nullptr);
      QFAIL("CPU daemons took a cuda run");
    } catch (const Error& e) {
      const std::string message = e.what();
      QVERIFY2(message.find("cluster.device \"cuda\": no GPU on node0") != std::string::npos &&
                   message.find(", node1") != std::string::npos &&
                   message.find("--devices cuda:N") != std::string::npos,
               e.what());
    }
  }

  // Runs everywhere: --devices names a device that cannot be used, and the daemon does not
  // start; the message says why (no GPU, no CUDA plugin, or no such index).
  void unusableDeviceStopsTheDaemonAtStart() {
    const bool gpu = test::whyNoGpu().empty();
    const QString device = gpu ? "cuda:999" : "cuda:0";
    QProcess node;
    node.start(QString::fromStdString(kNode), {"--devices", device});
    QVERIFY(node.waitForFinished(30000));
    QCOMPARE(node.exitCode(), 2);
    const QString err = node.readAllStandardError();
    QVERIFY2(err.contains("--devices: device '" + device + "'"), qPrintable(err));
    QVERIFY2(gpu ? err.contains("does not exist")
                 : (err.contains("no CUDA device") || err.contains("no CUDA plugin")),
             qPrintable(err));

    // A list is checked device by device, and a GPU listed twice is refused.
    QProcess twice;
    twice.start(QString::fromStdString(kNode), {"--devices", "cuda:0,cuda:0"});
    QVERIFY(twice.waitForFinished(30000));
    QCOMPARE(twice.exitCode(), 2);
    const QString twiceErr = twice.readAllStandardError();
    QVERIFY2(twiceErr.contains(gpu ? "cuda:0 is listed twice" : "--devices: device 'cuda:0'"),
             qPrintable(twiceErr));
  }

  // Runs everywhere: local nodes get a GPU each, and a machine with too few is refused by
  // numbers before any daemon starts.
  void localNodesGetOneGpuEach() {
    core::ClusterConfig cluster;
    cluster.device = "cuda";
    const int gpus = core::cudaDeviceCount();
    if (gpus > 0) {
      const auto options = remote::localNodeOptions(cluster, gpus);
      for (int i = 0; i < gpus; ++i)
        QCOMPARE(options[static_cast<std::size_t>(i)].devices, "cuda:" + std::to_string(i));
    }
    try {
      remote::localNodeOptions(cluster, gpus + 1);
      QFAIL("more local nodes than GPUs were accepted");
    } catch (const Error& e) {
      const std::string expected = "needs " + std::to_string(gpus + 1) + " GPU";
      QVERIFY2(std::string(e.what()).find(expected) != std::string::npos, e.what());
    }
    cluster.device = "cpu";
    QCOMPARE(remote::localNodeOptions(cluster, 3).back().devices, std::string("cpu"));
  }

  // One daemon with two GPUs takes two ranks, one on each (needs two GPUs).
  void oneDaemonTrainsOnEachOfItsGpus() {
    SKIP_WITHOUT_GPU();
    if (core::cudaDeviceCount() < 2)
      QSKIP("GPU test skipped: needs two GPUs, this machine has one");
    core::ExperimentSpec spec = cudaSpec(100);
    remote::LocalNodeOptions options;
    options.devices = "cuda:0,cuda:1";
    remote::LocalCluster cluster(kNode, {options});
    remote::Coordinator coordinator(cluster.addresses(), {});
    QCOMPARE(coordinator.connect().front().gpus, 2);
    const core::RunSummary s = coordinator.run(spec, 0, nullptr);
    QVERIFY2(s.status == core::RunStatus::kCompleted, s.error.c_str());
    QCOMPARE(s.nodes, int64_t{2});
    QCOMPARE(s.paramChecksum.size(), std::size_t{2});
    QCOMPARE(s.paramChecksum[1], s.paramChecksum[0]);
  }

  void gpuDaemonReportsAndTrainsOnItsGpu() {
    SKIP_WITHOUT_GPU();
    core::ExperimentSpec spec = cudaSpec(400);
    remote::LocalCluster cluster(kNode, remote::localNodeOptions(spec.cluster, 1));
    remote::Coordinator coordinator(cluster.addresses(), {});
    const std::vector<remote::NodeSummary> nodes = coordinator.connect();
    QCOMPARE(nodes.size(), std::size_t{1});
    const auto& devices = nodes[0].devices;
    const auto gpu = std::find_if(devices.begin(), devices.end(), [](const std::string& d) {
      return d.rfind("cuda:0 (", 0) == 0 && d.find("compute capability") != std::string::npos;
    });
    QVERIFY2(gpu != devices.end(), devices.empty() ? "no devices" : devices.back().c_str());

    NodeSamples sink;
    const core::RunSummary s = coordinator.run(spec, 0, &sink);
    QVERIFY2(s.status == core::RunStatus::kCompleted, s.error.c_str());
    QCOMPARE(s.steps, int64_t{400});
    std::lock_guard<std::mutex> lock(sink.mutex);
    QVERIFY(!sink.samples.empty());
    double busiest = 0.0;
    double memory = 0.0;
    for (const core::NodeMetrics& m : sink.samples) {
      if (std::isfinite(m.gpuUtil)) busiest = std::max(busiest, m.gpuUtil);
      if (std::isfinite(m.gpuMemBytes)) memory = std::max(memory, m.gpuMemBytes);
    }
    QVERIFY2(busiest > 0.0 && busiest <= 1.0, qPrintable(QString::number(busiest)));
    // At least the model, its gradients and momentum: 3 x 1.1 M floats.
    QVERIFY2(memory > 12e6, qPrintable(QString::number(memory)));
  }
};

QTEST_APPLESS_MAIN(TestCudaNode)
#include "test_cuda_node.moc"
