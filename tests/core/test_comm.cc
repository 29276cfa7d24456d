// Collectives in one process: ranks are threads, each with its own GlooCommunicator over a
// shared in-memory store, checked against closed-form results (values chosen to sum
// exactly in float), plus gradient buckets and failure reporting (the link emulation:
// test_emulated_link.cc).
#include <arpa/inet.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/address.h>
#include <netinet/in.h>

#include <QtTest/QtTest>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "core/comm/abort_signal.h"
#include "core/comm/comm_bench.h"
#include "core/comm/gloo_communicator.h"
#include "core/comm/gradient_buckets.h"
#include "core/comm/net_interface.h"
#include "core/common/check.h"
#include "tests/core/gloo_options.h"
#include "tests/core/rank_failures.h"
#include "tests/support/wait.h"

using namespace dtlab::core;
using dtlab::core::test::Failures;
using dtlab::core::test::runRanks;

namespace {
// Allocations of the calling thread only: the gradient-bucket test asserts that the training
// thread's per-step calls allocate nothing while the communication thread (and Gloo inside
// it) may.
thread_local int64_t threadNewCount = 0;
}  // namespace

void* operator new(std::size_t size) {
  ++threadNewCount;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Runs body(rank, comm) on `size` threads, each with a GlooCommunicator of the group on
// `store`. Exceptions and failed checks become Failures.
void runGroup(gloo::rendezvous::Store& store, int size, const GlooOptions& options,
              Failures& failures, const std::function<void(int, GlooCommunicator&)>& body) {
  runRanks(size, failures, [&](int r) {
    GlooCommunicator comm(store, r, size, options);
    body(r, comm);
  });
}

GlooOptions optionsFor(const std::string& prefix,
                       AllReduceAlgorithm algorithm = AllReduceAlgorithm::kAuto) {
  return test::glooOptions(prefix, algorithm);
}

// Counts exercising: nothing, one element (fewer elements than ranks), tiny odd counts, an
// odd count past the one-hop exchange, and one that spans several pipeline segments with a
// ragged tail (heavy, so only for small worlds).
std::vector<int64_t> countsFor(int size) {
  std::vector<int64_t> counts{0, 1, 2, 7, 1023, 20001};
  counts.push_back(size <= 4 ? (int64_t{1} << 20) + 3 : 600001);
  return counts;
}

// rank r contributes (r + 1) * (i % 5 + 1): the sum is n(n+1)/2 * (i % 5 + 1), small
// integers, exact in float.
float contribution(int rank, int64_t i) {
  return static_cast<float>((rank + 1) * (i % 5 + 1));
}
float expectedSum(int size, int64_t i) {
  return static_cast<float>(size * (size + 1) / 2 * (i % 5 + 1));
}

}  // namespace

class TestComm : public QObject {
  Q_OBJECT
 private slots:
  void algorithmNamesRoundTrip() {
    for (auto a : {AllReduceAlgorithm::kAuto, AllReduceAlgorithm::kOwn, AllReduceAlgorithm::kRing,
                   AllReduceAlgorithm::kRingChunked, AllReduceAlgorithm::kHalvingDoubling,
                   AllReduceAlgorithm::kGlooAllreduce, AllReduceAlgorithm::kSharedMemory}) {
      QCOMPARE(parseAllReduceAlgorithm(allReduceAlgorithmName(a)), a);
    }
    try {
      parseAllReduceAlgorithm("rign");
      QFAIL("an unknown algorithm name was accepted");
    } catch (const dtlab::Error& e) {
      QVERIFY2(std::string(e.what()).find("halving_doubling") != std::string::npos, e.what());
    }
  }

  void allReduceEveryWorldAlgorithmAndCount() {
    const std::vector<AllReduceAlgorithm> algorithms{AllReduceAlgorithm::kAuto,
                                                     AllReduceAlgorithm::kOwn,
                                                     AllReduceAlgorithm::kRing,
                                                     AllReduceAlgorithm::kRingChunked,
                                                     AllReduceAlgorithm::kHalvingDoubling,
                                                     AllReduceAlgorithm::kGlooAllreduce,
                                                     AllReduceAlgorithm::kSharedMemory};
    gloo::rendezvous::HashStore store;  // one store for every group: prefixes keep them apart
    for (int size = 1; size <= 8; ++size) {
      for (AllReduceAlgorithm algorithm : algorithms) {
        Failures failures;
        const std::string prefix =
            dtlab::detail::concat("allreduce-", size, "-", allReduceAlgorithmName(algorithm));
        runGroup(store, size, optionsFor(prefix, algorithm), failures,
                 [&](int rank, GlooCommunicator& comm) {
                   RANK_CHECK(comm.rank() == rank && comm.size() == size, "");
                   if (algorithm == AllReduceAlgorithm::kAuto) {
                     // The rule recorded with the measurements next to algorithmFor.
                     const bool ring = size >= 3;
                     RANK_CHECK(
                         comm.algorithmFor(1 << 20) ==
                             (ring ? AllReduceAlgorithm::kGlooAllreduce : AllReduceAlgorithm::kOwn),
                         "");
                     RANK_CHECK(comm.algorithmFor(1000) == AllReduceAlgorithm::kOwn, "");
                   } else {
                     RANK_CHECK(comm.algorithmFor(1000) == algorithm, "");
                   }
                   for (int64_t count : countsFor(size)) {
                     std::vector<float> data(static_cast<size_t>(count));
                     for (bool average : {false, true}) {
                       for (int64_t i = 0; i < count; ++i) data[i] = contribution(rank, i);
                       if (average) {
                         comm.allReduceAverage(data.data(), count);
                       } else {
                         comm.allReduceSum(data.data(), count);
                       }
                       for (int64_t i = 0; i < count; ++i) {
                         const float sum = expectedSum(size, i);
                         const float want = average ? sum / static_cast<float>(size) : sum;
                         RANK_CHECK(data[i] == want, "count ", count, " average ", average,
                                    " element ", i, ": ", data[i], " != ", want);
                       }
                     }
                   }
                 });
        QVERIFY2(failures.empty(),
                 qPrintable(QString::fromStdString(prefix + ":\n" + failures.text())));
      }
    }
  }

  void repeatedAllReduceOnTheSameBuffersStaysCorrect() {
    // The per-buffer caches must not mix up buffers of equal size, nor a freed buffer with a
    // new one at the same address.
    gloo::rendezvous::HashStore store;
    for (AllReduceAlgorithm algorithm :
         {AllReduceAlgorithm::kOwn, AllReduceAlgorithm::kRing, AllReduceAlgorithm::kHalvingDoubling,
          AllReduceAlgorithm::kSharedMemory}) {
      Failures failures;
      runGroup(store, 3,
               optionsFor(std::string("repeat-") + std::string(allReduceAlgorithmName(algorithm)),
                          algorithm),
               failures, [&](int rank, GlooCommunicator& comm) {
                 std::vector<float> a(30000), b(30000);
                 for (int step = 0; step < 4; ++step) {
                   for (size_t i = 0; i < a.size(); ++i) {
                     a[i] = static_cast<float>(rank + step);
                     b[i] = static_cast<float>(2 * rank + 1);
                   }
                   comm.allReduceSum(a.data(), static_cast<int64_t>(a.size()));
                   comm.allReduceSum(b.data(), static_cast<int64_t>(b.size()));
                   RANK_CHECK(a.front() == 3.0f + 3.0f * step && a.back() == a.front(), a.front());
                   RANK_CHECK(b.front() == 9.0f && b.back() == 9.0f, b.front());
                   // A fresh buffer each step (often at a recycled address).
                   std::vector<float> c(30000, static_cast<float>(rank));
                   comm.allReduceSum(c.data(), static_cast<int64_t>(c.size()));
                   RANK_CHECK(c.front() == 3.0f && c.back() == 3.0f, c.front());
                 }
               });
      QVERIFY2(failures.empty(), qPrintable(QString::fromStdString(failures.text())));
    }
  }

  void bytesSentFollowsTheAlgorithm() {
    // Own algorithm: reduce-scatter sends what is not ours, all-gather sends ours to every
    // peer, so the group as a whole sends 2(n-1) buffers; the one-hop exchange sends n-1
    // buffers per rank.
    gloo::rendezvous::HashStore store;
    const int size = 3;
    for (int64_t count : {int64_t{100001}, int64_t{1000}}) {
      std::atomic<int64_t> total{0};
      Failures failures;
      runGroup(store, size,
               optionsFor(dtlab::detail::concat("bytes-", count), AllReduceAlgorithm::kOwn),
               failures, [&](int, GlooCommunicator& comm) {
                 std::vector<float> data(static_cast<size_t>(count), 1.0f);
                 comm.allReduceSum(data.data(), count);
                 total += comm.bytesSent();
               });
      QVERIFY2(failures.empty(), qPrintable(QString::fromStdString(failures.text())));
      const int64_t bytes = count * 4;
      const int64_t expected = count >= 100000 ? 2 * (size - 1) * bytes : size * (size - 1) * bytes;
      QCOMPARE(total.load(), expected);
    }
  }

  void broadcastFromEveryRoot() {
    gloo::rendezvous::HashStore store;
    for (int size = 1; size <= 8; ++size) {
      Failures failures;
      runGroup(store, size, optionsFor(dtlab::detail::concat("bcast-", size)), failures,
               [&](int rank, GlooCommunicator& comm) {
                 std::vector<int64_t> counts{0, 1, 1023};
                 if (size <= 4) counts.push_back(int64_t{1} << 18);
                 for (int64_t count : counts) {
                   std::vector<float> data(static_cast<size_t>(count));
                   for (int root = 0; root < size; ++root) {
                     for (int64_t i = 0; i < count; ++i) {
                       data[i] = rank == root ? static_cast<float>(root * 1000 + i % 997) : -1.0f;
                     }
                     comm.broadcast(data.data(), count, root);
                     for (int64_t i = 0; i < count; ++i) {
                       RANK_CHECK(data[i] == static_cast<float>(root * 1000 + i % 997), "root ",
                                  root, " count ", count, " element ", i, ": ", data[i]);
                     }
                   }
                 }
               });
      QVERIFY2(failures.empty(), qPrintable(QString::fromStdString(failures.text())));
    }
  }

  void allGatherIsRankMajor() {
    gloo::rendezvous::HashStore store;
    for (int size = 1; size <= 8; ++size) {
      Failures failures;
      runGroup(store, size, optionsFor(dtlab::detail::concat("gather-", size)), failures,
               [&](int rank, GlooCommunicator& comm) {
                 for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{1023}, int64_t{40000}}) {
                   std::vector<float> in(static_cast<size_t>(count));
                   std::vector<float> out(static_cast<size_t>(count * size), -1.0f);
                   for (int64_t i = 0; i < count; ++i)
                     in[i] = static_cast<float>(rank * 100000 + i);
                   comm.allGather(in.data(), count, out.data());
                   for (int r = 0; r < size; ++r) {
                     for (int64_t i = 0; i < count; ++i) {
                       RANK_CHECK(out[r * count + i] == static_cast<float>(r * 100000 + i),
                                  "count ", count, " block ", r, " element ", i);
                     }
                   }
                 }
               });
      QVERIFY2(failures.empty(), qPrintable(QString::fromStdString(failures.text())));
    }
  }

  void barrierHoldsEveryoneUntilAllArrive() {
    gloo::rendezvous::HashStore store;
    for (int size : {2, 5, 8}) {
      std::atomic<int> arrived{0};
      Failures failures;
      runGroup(store, size, optionsFor(dtlab::detail::concat("barrier-", size)), failures,
               [&](int rank, GlooCommunicator& comm) {
                 for (int round = 1; round <= 3; ++round) {
                   // Late arrivals: the last rank comes ~20 ms after the first.
                   std::this_thread::sleep_for(std::chrono::milliseconds(3 * rank));
                   arrived.fetch_add(1);
                   comm.barrier();
                   RANK_CHECK(arrived.load() >= round * size, "left round ", round,
                              " before everyone arrived: ", arrived.load());
                   comm.barrier();  // nobody starts the next round before all checked
                 }
               });
      QVERIFY2(failures.empty(), qPrintable(QString::fromStdString(failures.text())));
    }
  }

  void missingRankTimesOutWithItsName() {
    gloo::rendezvous::HashStore store;
    GlooOptions options = optionsFor("lonely");
    options.connectTimeout = std::chrono::milliseconds(300);
    const auto start = Clock::now();
    try {
      GlooCommunicator comm(store, 0, 3, options);
      QFAIL("a rendezvous without its peers succeeded");
    } catch (const dtlab::Error& e) {
      const std::string message = e.what();
      QVERIFY2(
          message.find("rendezvous timed out after 0.3 s waiting for rank 1") != std::string::npos,
          e.what());
      QVERIFY2(message.find("missing ranks: 1 2") != std::string::npos, e.what());
    }
    QVERIFY(secondsSince(start) < 10.0);
  }

  void peerFailureBecomesErrorAndPoisonsTheGroup() {
    gloo::rendezvous::HashStore store;
    GlooOptions options = optionsFor("failing", AllReduceAlgorithm::kOwn);
    options.opTimeout = std::chrono::milliseconds(500);
    std::string first;
    std::string second;
    std::thread peer([&] {
      GlooCommunicator comm(store, 1, 2, options);
      comm.barrier();
      // Leaves without joining the all-reduce.
    });
    {
      GlooCommunicator comm(store, 0, 2, options);
      comm.barrier();
      peer.join();
      std::vector<float> data(1000, 1.0f);
      try {
        comm.allReduceSum(data.data(), 1000);
      } catch (const dtlab::Error& e) {
        first = e.what();
      }
      try {
        comm.barrier();
      } catch (const dtlab::Error& e) {
        second = e.what();
      }
    }
    QVERIFY2(
        first.find("all-reduce (own) of 1000 floats on rank 0 of 2 failed") != std::string::npos,
        first.c_str());
    QVERIFY2(second.find("unusable after an earlier failure") != std::string::npos, second.c_str());
  }

  // A collective blocked on a peer that never comes (a stopped node) ends as soon as the
  // abort signal fires, long before its 20 s timeout, and the group refuses later calls.
  void abortEndsAPendingCollective() {
    gloo::rendezvous::HashStore store;
    GlooOptions options = optionsFor("abort", AllReduceAlgorithm::kOwn);
    AbortSignal signal;
    options.abort = &signal;
    std::atomic<bool> peerMayLeave{false};
    std::string peerError;
    std::thread peer([&] {
      GlooOptions peerOptions = optionsFor("abort", AllReduceAlgorithm::kOwn);
      GlooCommunicator comm(store, 1, 2, peerOptions);
      comm.barrier();
      // (Bounded: a test that failed before letting it go still ends.)
      dtlab::test::waitUntil([&] { return peerMayLeave.load(); }, std::chrono::seconds(60));
      // The aborted rank closed its connections, so this rank's collectives fail. The first
      // all-reduce may still complete: with two ranks the aborted one exchanges whole buffers
      // in one hop, and the data it sent before the abort may already sit in our area. The
      // barrier after it needs a message the aborted rank never sends.
      std::vector<float> data(10, 1.0f);
      try {
        comm.allReduceSum(data.data(), 10);
        comm.barrier();
      } catch (const CommError& e) {
        peerError = std::string(toString(e.failure())) + ": " + e.what();
      }
    });
    GlooCommunicator comm(store, 0, 2, options);
    comm.barrier();
    // The abort comes once the all-reduce is under way (blocked on the peer, which never
    // joins it): an abort before it would only have it refused, a different path.
    bool sawItUnderWay = false;
    std::thread aborter([&] {
      const auto deadline = Clock::now() + std::chrono::seconds(10);
      while (comm.collectivesUnderWay() == 0 && Clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      sawItUnderWay = comm.collectivesUnderWay() == 1;
      signal.abort("node1 lost");
    });
    std::vector<float> data(100000, 1.0f);
    const auto start = Clock::now();
    CommFailure failure = CommFailure::kTimeout;
    std::string message;
    try {
      comm.allReduceSum(data.data(), 100000);
    } catch (const CommError& e) {
      failure = e.failure();
      message = e.what();
    }
    const double waited = secondsSince(start);
    aborter.join();
    peerMayLeave.store(true);
    peer.join();
    QVERIFY2(sawItUnderWay, "the all-reduce was not under way within 10 s");
    QVERIFY2(failure == CommFailure::kAborted, message.c_str());
    QVERIFY2(
        message.find("all-reduce (own) of 100000 floats on rank 0 of 2 aborted (node1 lost)") !=
            std::string::npos,
        message.c_str());
    QCOMPARE(comm.collectivesUnderWay(), 0);
    QVERIFY2(waited < 5.0, std::to_string(waited).c_str());
    QVERIFY2(peerError.rfind("peer_closed", 0) == 0, peerError.c_str());
    try {
      comm.barrier();
      QFAIL("an aborted group ran a barrier");
    } catch (const CommError& e) {
      QVERIFY(e.failure() == CommFailure::kAborted);
    }
  }

  // Rank 1's published address leads nowhere: rank 0 must fail within the connect timeout
  // naming rank 1 and its address, whichever side of the connection it was to take.
  void unreachablePeerFailsWithinTheConnectTimeout() {
    for (const uint16_t port : {uint16_t{1}, uint16_t{65535}}) {
      gloo::rendezvous::HashStore store;
      GlooOptions options = optionsFor("unreachable" + std::to_string(port));
      options.connectTimeout = std::chrono::milliseconds(1500);
      gloo::rendezvous::PrefixStore prefixed(options.keyPrefix, store);
      // What a rank 1 that bound an address nobody can reach would have published.
      sockaddr_in address{};
      address.sin_family = AF_INET;
      address.sin_port = htons(port);
      inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
      sockaddr_storage storage{};
      std::memcpy(&storage, &address, sizeof address);
      const std::vector<char> bytes = gloo::transport::tcp::Address(storage, 1).bytes();
      // Sized first and filled in place: GCC 12 misreads pointer-range inserts here
      // (-Wstringop-overflow).
      std::vector<char> published(8 + bytes.size());
      const int32_t peer = 0;
      const auto length = static_cast<uint32_t>(bytes.size());
      std::memcpy(published.data(), &peer, 4);
      std::memcpy(published.data() + 4, &length, 4);
      std::copy(bytes.begin(), bytes.end(), published.begin() + 8);
      prefixed.set("join/1", {'1'});
      prefixed.set("addr/1", published);
      const auto start = Clock::now();
      std::string message;
      try {
        GlooCommunicator comm(store, 0, 2, options);
      } catch (const CommError& e) {
        message = e.what();
      }
      const double waited = secondsSince(start);
      QVERIFY2(message.find("could not connect to rank 1 at 127.0.0.1:" + std::to_string(port)) !=
                   std::string::npos,
               message.c_str());
      QVERIFY2(waited < 4.0, std::to_string(waited).c_str());
    }
  }

  // What NCCL is pinned to: the interface holding an address, by number or by name; nothing for
  // an address no interface holds or a name that does not resolve.
  void interfaceHoldingNamesTheInterface() {
    using dtlab::core::interfaceHolding;
    QCOMPARE(interfaceHolding("127.0.0.1"), std::string("lo"));
    QCOMPARE(interfaceHolding("localhost"), std::string("lo"));
    QVERIFY(interfaceHolding("192.0.2.1").empty());  // TEST-NET-1: nobody's address
    QVERIFY(interfaceHolding("no-such-host.invalid").empty());
    QVERIFY(interfaceHolding("").empty());
  }

  void gradientBucketsFollowBackwardOrder() {
    // Five layers laid out first to last; backward yields the last first.
    gloo::rendezvous::HashStore store;
    GlooCommunicator comm(store, 0, 1, optionsFor("buckets-shape"));
    std::vector<float> grads(71040);
    const std::vector<GradientRange> layers{
        {51040, 71040}, {51033, 51040}, {1033, 51033}, {1000, 1033}, {0, 1000}};
    GradientBucketsOptions options;
    options.bucketBytes = 40000;  // 10000 floats
    GradientBuckets buckets(comm, grads.data(), 71040, layers, options);
    const std::vector<GradientRange> expected{{51040, 71040}, {1033, 51040}, {0, 1033}};
    QCOMPARE(buckets.buckets(), expected);

    QVERIFY_THROWS_EXCEPTION(dtlab::EnforceError, buckets.waitAll());  // nothing marked
    buckets.markReady(0, 71040);
    buckets.waitAll();
    buckets.markReady(0, 1000);
    QVERIFY_THROWS_EXCEPTION(dtlab::EnforceError, buckets.markReady(500, 1033));
    QVERIFY_THROWS_EXCEPTION(dtlab::EnforceError,
                             GradientBuckets(comm, grads.data(), 100, {{0, 40}, {50, 100}}));
  }

  // On a GPU each bucket's all-reduce waits on the compute stream only as far as a fence the
  // training thread records once the bucket is complete: every collective must find its own
  // bucket's fence marked for this step, marked before the collective could start (a one-rank
  // group that logs the calls; the marks come in any order).
  void gradientBucketsMarkEachFenceBeforeItsCollective() {
    class FenceLog final : public Communicator {
     public:
      int rank() const override { return 0; }
      int size() const override { return 1; }
      void allReduceSum(float*, int64_t) override {}
      void broadcast(float*, int64_t, int) override {}
      void allGather(const float* in, int64_t count, float* out) override {
        std::copy_n(in, count, out);
      }
      void barrier() override {}
      int64_t bytesSent() const override { return 0; }
      int64_t bytesReceived() const override { return 0; }
      void prepareFences(int fenceCount) override {
        std::lock_guard lock(mutex);
        marks.assign(static_cast<std::size_t>(fenceCount), 0);
        uses.assign(static_cast<std::size_t>(fenceCount), 0);
      }
      void markComputeFence(int slot) override {
        std::lock_guard lock(mutex);
        ++marks.at(static_cast<std::size_t>(slot));
      }
      void allReduceAfterFence(float* data, int64_t count, bool average, int slot) override {
        std::this_thread::sleep_for(std::chrono::microseconds(100));  // let marks race ahead
        std::lock_guard lock(mutex);
        const auto s = static_cast<std::size_t>(slot);
        ++uses.at(s);
        if (marks[s] != uses[s]) problems.push_back(slot);
        collectives.push_back({data, count, average, slot});
      }
      struct Call {
        float* data;
        int64_t count;
        bool average;
        int slot;
      };
      std::mutex mutex;
      std::vector<int> marks, uses, problems;
      std::vector<Call> collectives;
    };
    FenceLog log;
    std::vector<float> grads(71040);
    const std::vector<GradientRange> layers{
        {51040, 71040}, {51033, 51040}, {1033, 51033}, {1000, 1033}, {0, 1000}};
    GradientBucketsOptions options;
    options.bucketBytes = 40000;
    GradientBuckets buckets(log, grads.data(), 71040, layers, options);
    const std::vector<GradientRange> marks{
        {51040, 71040}, {41033, 51040}, {0, 1033}, {1033, 41033}};
    for (int step = 0; step < 3; ++step) {
      for (const GradientRange& m : marks) buckets.markReady(m.begin, m.end);
      buckets.waitAll();
    }
    std::lock_guard lock(log.mutex);
    QVERIFY2(log.problems.empty(), "a bucket's collective ran without its fence of the step");
    QCOMPARE(log.collectives.size(), std::size_t{9});  // 3 buckets, 3 steps
    for (std::size_t i = 0; i < log.collectives.size(); ++i) {
      const auto& call = log.collectives[i];
      const GradientRange& bucket = buckets.buckets()[i % 3];
      QCOMPARE(call.slot, static_cast<int>(i % 3));  // in bucket order, each its own slot
      QCOMPARE(call.data, grads.data() + bucket.begin);
      QCOMPARE(call.count, bucket.size());
      QVERIFY(call.average);
    }
    QCOMPARE(log.marks, (std::vector<int>{3, 3, 3}));
  }

  void gradientBucketsEqualOneBigAllReduce() {
    const int size = 3;
    const int64_t count = 71040;
    const std::vector<GradientRange> layers{
        {51040, 71040}, {51033, 51040}, {1033, 51033}, {1000, 1033}, {0, 1000}};
    gloo::rendezvous::HashStore store;
    Failures failures;
    std::vector<int64_t> trainingThreadAllocations(size, -1);
    runGroup(store, size, optionsFor("buckets", AllReduceAlgorithm::kAuto), failures,
             [&](int rank, GlooCommunicator& comm) {
               std::vector<float> grads(count), reference(count);
               GradientBucketsOptions options;
               options.bucketBytes = 40000;
               GradientBuckets buckets(comm, grads.data(), count, layers, options);
               // Backward: last layer first, the big layer in two pieces (weights, bias);
               // rank 1 reports its layers in a different order, which must not matter.
               std::vector<GradientRange> marks{{51040, 71040}, {51033, 51040}, {41033, 51033},
                                                {1033, 41033},  {1000, 1033},   {0, 1000}};
               if (rank == 1) std::reverse(marks.begin(), marks.end());
               for (int step = 0; step < 4; ++step) {
                 for (int64_t i = 0; i < count; ++i) {
                   grads[i] = static_cast<float>((rank + 1) * ((i + step) % 13));
                 }
                 const int64_t before = threadNewCount;
                 for (const auto& m : marks) {
                   // Backward work between the marks, for the overlap to be real.
                   std::this_thread::sleep_for(std::chrono::microseconds(200));
                   buckets.markReady(m.begin, m.end);
                 }
                 buckets.waitAll();
                 if (step > 0) trainingThreadAllocations[rank] = threadNewCount - before;
                 for (int64_t i = 0; i < count; ++i) {
                   reference[i] = static_cast<float>((rank + 1) * ((i + step) % 13));
                 }
                 // Buckets run on their own thread; the communicator is free again after
                 // waitAll().
                 comm.allReduceAverage(reference.data(), count);
                 for (int64_t i = 0; i < count; ++i) {
                   RANK_CHECK(grads[i] == reference[i], "step ", step, " element ", i, ": ",
                              grads[i], " != ", reference[i]);
                 }
                 const float want = static_cast<float>(6 * (step % 13)) / 3.0f;
                 RANK_CHECK(grads[0] == want, grads[0], " != ", want);
               }
               RANK_CHECK(buckets.lastCommSeconds() > 0.0, "");
             });
    QVERIFY2(failures.empty(), qPrintable(QString::fromStdString(failures.text())));
    for (int r = 0; r < size; ++r) QCOMPARE(trainingThreadAllocations[r], int64_t{0});
  }

  // The benchmark runs DTLab's communicator and Gloo's algorithms on one buffer, in the same
  // ranks, and checks every element of every repetition: on a correct run no side reports a
  // wrong element. One float (fewer elements than ranks) and an odd count reach the
  // algorithms' edge cases. Sums that grow by powers of two stay exact far beyond 2^24: 2
  // ranks run 64 calls a repetition (the cap), 4 ranks 48 (below 2^100), 3 ranks 13 (below
  // 2^24).
  void benchComparesEverySideAndChecksResults() {
    for (int size : {2, 3, 4}) {
      for (int64_t bytes : {int64_t{4}, int64_t{4 * 1001}}) {
        gloo::rendezvous::HashStore store;
        std::vector<AllReduceBenchResult> results(static_cast<size_t>(size));
        Failures failures;
        runGroup(store, size, optionsFor("bench"), failures, [&](int rank, GlooCommunicator& comm) {
          results[static_cast<size_t>(rank)] = benchAllReduce(comm, store, benchConfig(bytes));
        });
        QVERIFY2(failures.empty(), qPrintable(QString::fromStdString(failures.text())));
        for (const AllReduceBenchResult& r : results) {
          QCOMPARE(r.bytes, bytes);
          QCOMPARE(r.ranks, size);
          QCOMPARE(r.sides.size(), size_t{5});
          QCOMPARE(r.callsPerRepetition, size == 2 ? 64 : size == 3 ? 13 : 48);
          for (const AllReduceSideResult& s : r.sides) {
            QVERIFY2(s.wrong == 0, qPrintable(QString::fromStdString(s.name)));
            QVERIFY(s.minSeconds > 0.0 && s.minSeconds <= s.medianSeconds);
            QVERIFY(std::abs(s.algbwGBps - bytes / s.medianSeconds / 1e9) <= 1e-9 * s.algbwGBps);
            const double factor = 2.0 * (size - 1) / size;
            QVERIFY(std::abs(s.busbwGBps - s.algbwGBps * factor) <= 1e-9 * s.busbwGBps);
          }
        }
      }
    }
  }

  // The check is real: a communicator whose all-reduce leaves the buffer alone is caught,
  // and only its side is.
  void benchReportsWrongResults() {
    class SkipsAllReduce final : public Communicator {
     public:
      explicit SkipsAllReduce(Communicator& inner) : inner_(inner) {}
      int rank() const override { return inner_.rank(); }
      int size() const override { return inner_.size(); }
      void allReduceSum(float*, int64_t) override {}
      void broadcast(float* data, int64_t count, int root) override {
        inner_.broadcast(data, count, root);
      }
      void allGather(const float* in, int64_t count, float* out) override {
        inner_.allGather(in, count, out);
      }
      void barrier() override { inner_.barrier(); }
      int64_t bytesSent() const override { return inner_.bytesSent(); }
      int64_t bytesReceived() const override { return inner_.bytesReceived(); }

     private:
      Communicator& inner_;
    };
    gloo::rendezvous::HashStore store;
    const int size = 2;
    const int64_t bytes = 4 * 64;
    std::vector<AllReduceBenchResult> results(size);
    Failures failures;
    runGroup(store, size, optionsFor("bench"), failures, [&](int rank, GlooCommunicator& comm) {
      SkipsAllReduce broken(comm);
      results[static_cast<size_t>(rank)] = benchAllReduce(broken, store, benchConfig(bytes));
    });
    QVERIFY2(failures.empty(), qPrintable(QString::fromStdString(failures.text())));
    for (const AllReduceBenchResult& r : results) {
      const int rounds = 1 + 3;  // warm-up + timed, all checked
      QCOMPARE(r.sides[0].wrong, rounds * (bytes / 4));
      for (size_t i = 1; i < r.sides.size(); ++i) QCOMPARE(r.sides[i].wrong, int64_t{0});
    }
  }

 private:
  static AllReduceBenchConfig benchConfig(int64_t bytes) {
    AllReduceBenchConfig config;
    config.bytes = bytes;
    config.warmup = 1;
    config.repetitions = 3;
    config.timeout = std::chrono::seconds(20);
    return config;
  }
};

QTEST_APPLESS_MAIN(TestComm)
#include "test_comm.moc"
