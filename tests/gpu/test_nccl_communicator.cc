// NCCL collectives: the group's id through the rendezvous store, every collective on device
// and on host buffers, a missing peer that times out naming the ranks, an abort that ends the
// group. One GPU gives a one-rank group (the multi-rank logic of the strategies is tested on
// Gloo); with two or more, one rank per GPU checks the sums. Needs a GPU: without one (or in a
// build without CUDA) the cases skip with the reason.
#include <QtTest/QtTest>

#include <gloo/rendezvous/hash_store.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/backend/backend.h"
#include "core/backend/cuda_plugin.h"
#include "core/comm/abort_signal.h"
#include "tests/gpu/gpu_available.h"

using namespace dtlab;
using namespace dtlab::core;

namespace {

// `values` uploaded to device memory of `backend`, then `collective(in, out)` with `out` a
// device buffer of outCount floats; returns what `out` holds, or `in` when outCount is 0 (an
// in-place collective).
template <typename F>
std::vector<float> onDevice(Backend& backend, const std::vector<float>& values, int64_t outCount,
                            F collective) {
  const auto n = static_cast<int64_t>(values.size());
  float* in = backend.allocate(n);
  float* out = backend.allocate(outCount);
  backend.upload(in, values.data(), n);
  collective(in, out);
  std::vector<float> result(static_cast<std::size_t>(outCount > 0 ? outCount : n));
  backend.download(result.data(), outCount > 0 ? out : in, static_cast<int64_t>(result.size()));
  backend.release(in);
  backend.release(out);
  return result;
}

}  // namespace

class TestNcclCommunicator : public QObject {
  Q_OBJECT

 private slots:
  void oneRankGroupRunsEveryCollective() {
    SKIP_WITHOUT_GPU();
    std::unique_ptr<Backend> gpu = makeBackend("cuda:0", 1);
    gloo::rendezvous::HashStore store;
    NcclOptions options;
    options.keyPrefix = "one";
    const std::unique_ptr<Communicator> comm = makeNcclCommunicator(store, 0, 1, options);
    QVERIFY(comm->deviceMemory());
    QCOMPARE(comm->size(), 1);
    const std::vector<float> values = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f};
    const auto n = static_cast<int64_t>(values.size());
    // Device buffers.
    QCOMPARE(onDevice(*gpu, values, 0, [&](float* in, float*) { comm->allReduceSum(in, n); }),
             values);
    QCOMPARE(onDevice(*gpu, values, 0, [&](float* in, float*) { comm->broadcast(in, n, 0); }),
             values);
    QCOMPARE(onDevice(*gpu, values, n, [&](float* in, float* out) { comm->allGather(in, n, out); }),
             values);
    // Host buffers are staged through the device.
    std::vector<float> host = values;
    comm->allReduceSum(host.data(), n);
    QCOMPARE(host, values);
    std::vector<float> gathered(values.size());
    comm->allGather(values.data(), n, gathered.data());
    QCOMPARE(gathered, values);
    comm->barrier();
    QCOMPARE(comm->bytesSent(), int64_t{0});  // one rank sends nothing
  }

  void ranksOnEveryGpuSum() {
    SKIP_WITHOUT_GPU();
    const int gpus = cudaDeviceCount();
    if (gpus < 2)
      QSKIP(qPrintable(QString("needs 2 GPUs for 2 ranks, this machine has %1").arg(gpus)));
    gloo::rendezvous::HashStore store;
    std::vector<std::vector<float>> results(static_cast<std::size_t>(gpus));
    std::vector<std::string> errors(static_cast<std::size_t>(gpus));
    std::vector<std::thread> ranks;
    for (int r = 0; r < gpus; ++r)
      ranks.emplace_back([&, r] {
        try {
          std::unique_ptr<Backend> gpu = makeBackend("cuda:" + std::to_string(r), 1);
          NcclOptions options;
          options.device = r;
          options.keyPrefix = "many";
          const std::unique_ptr<Communicator> comm = makeNcclCommunicator(store, r, gpus, options);
          const std::vector<float> mine(1000, static_cast<float>(r + 1));
          results[static_cast<std::size_t>(r)] =
              onDevice(*gpu, mine, 0, [&](float* in, float*) { comm->allReduceSum(in, 1000); });
        } catch (const std::exception& e) {
          errors[static_cast<std::size_t>(r)] = e.what();
        }
      });
    for (std::thread& t : ranks) t.join();
    const float expected = static_cast<float>(gpus * (gpus + 1) / 2);
    for (int r = 0; r < gpus; ++r) {
      QVERIFY2(errors[static_cast<std::size_t>(r)].empty(),
               errors[static_cast<std::size_t>(r)].c_str());
      QCOMPARE(results[static_cast<std::size_t>(r)].front(), expected);
      QCOMPARE(results[static_cast<std::size_t>(r)].back(), expected);
    }
  }

  void missingPeerTimesOutNamingIt() {
    SKIP_WITHOUT_GPU();
    gloo::rendezvous::HashStore store;
    NcclOptions options;
    options.keyPrefix = "alone";
    options.connectTimeout = std::chrono::milliseconds(500);
    try {
      const std::unique_ptr<Communicator> comm = makeNcclCommunicator(store, 0, 2, options);
      QFAIL("a group of two was built with one rank");
    } catch (const CommError& e) {
      QVERIFY(e.failure() == CommFailure::kTimeout);
      QVERIFY2(std::string(e.what()).find("waiting for rank 1") != std::string::npos, e.what());
    }
  }

  void abortEndsTheGroup() {
    SKIP_WITHOUT_GPU();
    gloo::rendezvous::HashStore store;
    AbortSignal signal;
    NcclOptions options;
    options.keyPrefix = "abort";
    options.abort = &signal;
    const std::unique_ptr<Communicator> comm = makeNcclCommunicator(store, 0, 1, options);
    std::vector<float> host(16, 1.0f);
    comm->allReduceSum(host.data(), 16);
    signal.abort("cancelled by the test");
    try {
      comm->allReduceSum(host.data(), 16);
      QFAIL("a collective ran after the abort");
    } catch (const CommError& e) {
      QVERIFY(e.failure() == CommFailure::kAborted);
      QVERIFY2(std::string(e.what()).find("cancelled by the test") != std::string::npos, e.what());
    }
    try {
      comm->barrier();
      QFAIL("the group was usable after the abort");
    } catch (const CommError& e) {
      QVERIFY2(std::string(e.what()).find("failed earlier") != std::string::npos, e.what());
    }
  }
};

QTEST_APPLESS_MAIN(TestNcclCommunicator)
#include "test_nccl_communicator.moc"
