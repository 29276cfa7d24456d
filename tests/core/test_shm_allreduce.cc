// The shared-memory all-reduce of ranks on one host: when a group gets it (and when not, with
// the reason), that it leaves nothing in /dev/shm, its sums at every size against closed-form
// results, and how it fails: an abort, a peer that leaves, a peer that never comes. Ranks are
// threads of this process (one host by construction); the segment is real shared memory.
#include <gloo/rendezvous/hash_store.h>
#include <gloo/rendezvous/prefix_store.h>

#include <QtTest>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/comm/abort_signal.h"
#include "core/comm/communicator.h"
#include "core/comm/gloo_communicator.h"
#include "core/comm/shm_allreduce.h"
#include "tests/core/gloo_options.h"
#include "tests/support/wait.h"

using namespace dtlab::core;

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kOpTimeout = std::chrono::milliseconds(20000);

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Runs create() for every rank on its own thread; returns each rank's segment (or null).
std::vector<std::unique_ptr<SharedMemoryAllReduce>> createGroup(
    gloo::rendezvous::Store& store, int size, std::vector<std::string>* whyNot = nullptr,
    std::chrono::milliseconds opTimeout = kOpTimeout) {
  std::vector<std::unique_ptr<SharedMemoryAllReduce>> group(static_cast<size_t>(size));
  std::vector<std::string> reasons(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      group[static_cast<size_t>(r)] = SharedMemoryAllReduce::create(
          store, r, size, deadline, opTimeout, &reasons[static_cast<size_t>(r)]);
    });
  }
  for (auto& t : threads) t.join();
  if (whyNot != nullptr) *whyNot = reasons;
  return group;
}

// Segments this process left under /dev/shm (their names start with /dtlab-<pid>-).
int leftoverSegments() {
  const std::string prefix = "dtlab-" + std::to_string(getpid()) + "-";
  int found = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm"))
    if (entry.path().filename().string().rfind(prefix, 0) == 0) ++found;
  return found;
}

// rank r contributes (r + 1) * (i % 7 + 1): exact in float.
float contribution(int rank, int64_t i) {
  return static_cast<float>((rank + 1) * (i % 7 + 1));
}

}  // namespace

class TestShmAllReduce : public QObject {
  Q_OBJECT
 private slots:
  void ranksOfOneProcessShareASegmentAndLeaveNoName() {
    QVERIFY(!SharedMemoryAllReduce::hostKey().empty());
    QCOMPARE(SharedMemoryAllReduce::hostKey(), SharedMemoryAllReduce::hostKey());
    gloo::rendezvous::HashStore store;
    std::vector<std::string> whyNot;
    auto group = createGroup(store, 3, &whyNot);
    for (int r = 0; r < 3; ++r)
      QVERIFY2(group[static_cast<size_t>(r)] != nullptr, whyNot[static_cast<size_t>(r)].c_str());
    // The name was unlinked once every rank had mapped the segment.
    QCOMPARE(leftoverSegments(), 0);
  }

  // Rank 1 here is played by hand through the store, claiming another host: every rank (rank 0
  // included) gets no segment, the reason names the rank, and nothing is created.
  void aRankOnAnotherHostKeepsTheGroupOnTcp() {
    gloo::rendezvous::HashStore store;
    std::string whyNot;
    std::unique_ptr<SharedMemoryAllReduce> shm;
    std::thread rank0([&] {
      shm = SharedMemoryAllReduce::create(store, 0, 2, Clock::now() + std::chrono::seconds(10),
                                          kOpTimeout, &whyNot);
    });
    const std::string elsewhere = "another-boot-id/net:[1]/pid:[1]";
    store.set("shm/host/1", std::vector<char>(elsewhere.begin(), elsewhere.end()));
    store.wait({"shm/ready"});
    const std::vector<char> ready = store.get("shm/ready");
    rank0.join();
    QVERIFY(shm == nullptr);
    QVERIFY2(whyNot == "rank 1 is on another host (or network namespace)", whyNot.c_str());
    QCOMPARE(std::string(ready.begin(), ready.end()), "-" + whyNot);
    QCOMPARE(leftoverSegments(), 0);
  }

  // For bookkeeping beside the data path (the link emulation's exchange), ranks of one machine
  // may share a segment across network namespaces: the key then leaves the namespace out, and
  // another boot still refuses.
  void acrossNetworkNamespacesOnlyTheMachineCounts() {
    const std::string withNet = SharedMemoryAllReduce::hostKey();
    const std::string withoutNet = SharedMemoryAllReduce::hostKey(false);
    QCOMPARE(withoutNet, SharedMemoryAllReduce::hostKey(false));
    QVERIFY2(withNet != withoutNet && withoutNet.find("/any/") != std::string::npos,
             withoutNet.c_str());
    QCOMPARE(withoutNet.substr(0, withoutNet.find('/')), withNet.substr(0, withNet.find('/')));
    gloo::rendezvous::HashStore store;
    std::string whyNot;
    std::unique_ptr<SharedMemoryAllReduce> shm;
    std::thread rank0([&] {
      shm = SharedMemoryAllReduce::create(store, 0, 2, Clock::now() + std::chrono::seconds(10),
                                          kOpTimeout, &whyNot, /*acrossNetworkNamespaces=*/true);
    });
    const std::string elsewhere = "another-boot-id/any/pid:[1]";
    store.set("shm/host/1", std::vector<char>(elsewhere.begin(), elsewhere.end()));
    store.wait({"shm/ready"});
    rank0.join();
    QVERIFY(shm == nullptr);
    QVERIFY2(whyNot == "rank 1 is on another host (or network namespace)", whyNot.c_str());
    QCOMPARE(leftoverSegments(), 0);
  }

  // Counts around the per-round slot (256 Ki floats), the split into parts and the direct
  // path's limit, in groups of 2 to 5: every element exact, every rank the same bits.
  void sumsAreExactAtEverySize() {
    for (int size : {2, 3, 4, 5}) {
      gloo::rendezvous::HashStore store;
      auto group = createGroup(store, size);
      std::vector<std::string> failures(static_cast<size_t>(size));
      std::vector<std::thread> threads;
      for (int r = 0; r < size; ++r) {
        threads.emplace_back([&, r] {
          try {
            for (int64_t count : {int64_t{1}, int64_t{3}, int64_t{1000}, int64_t{65537},
                                  int64_t{262144}, int64_t{262145}, int64_t{700001}}) {
              std::vector<float> data(static_cast<size_t>(count));
              for (int64_t i = 0; i < count; ++i) data[static_cast<size_t>(i)] = contribution(r, i);
              group[static_cast<size_t>(r)]->allReduceSum(data.data(), count);
              for (int64_t i = 0; i < count; ++i) {
                const float want = static_cast<float>(size * (size + 1) / 2 * (i % 7 + 1));
                if (data[static_cast<size_t>(i)] != want) {
                  failures[static_cast<size_t>(r)] =
                      dtlab::detail::concat("count ", count, " element ", i, ": ",
                                            data[static_cast<size_t>(i)], " != ", want);
                  return;
                }
              }
            }
          } catch (const std::exception& e) {
            failures[static_cast<size_t>(r)] = e.what();
          }
        });
      }
      for (auto& t : threads) t.join();
      for (int r = 0; r < size; ++r)
        QVERIFY2(
            failures[static_cast<size_t>(r)].empty(),
            dtlab::detail::concat(size, " ranks, rank ", r, ": ", failures[static_cast<size_t>(r)])
                .c_str());
    }
  }

  // Through GlooCommunicator: the group has the path, tuning may choose it, a forced "shm"
  // runs it, and turned off the group stays on TCP and says so.
  void theCommunicatorOffersItAndCanTurnItOff() {
    gloo::rendezvous::HashStore store;
    for (bool on : {true, false}) {
      GlooOptions options =
          test::glooOptions(on ? "shm-on" : "shm-off",
                            on ? AllReduceAlgorithm::kSharedMemory : AllReduceAlgorithm::kAuto);
      options.sharedMemory = on;
      std::vector<std::string> failures(2);
      std::vector<std::thread> threads;
      for (int r = 0; r < 2; ++r) {
        threads.emplace_back([&, r] {
          try {
            GlooCommunicator comm(store, r, 2, options);
            const auto candidates = comm.tunedCandidates();
            const bool offered = std::find(candidates.begin(), candidates.end(),
                                           AllReduceAlgorithm::kSharedMemory) != candidates.end();
            if (comm.hasSharedMemory() != on || offered != on)
              failures[static_cast<size_t>(r)] =
                  "shared memory offered: " + std::to_string(offered);
            if (!on && comm.sharedMemoryWhyNot() != "turned off")
              failures[static_cast<size_t>(r)] = "why not: " + comm.sharedMemoryWhyNot();
            std::vector<float> data(300000, static_cast<float>(r + 1));
            comm.allReduceSum(data.data(), static_cast<int64_t>(data.size()));
            if (data.front() != 3.0f || data.back() != 3.0f)
              failures[static_cast<size_t>(r)] = "wrong sum";
            // Counted as a ring would exchange the bytes with the peers.
            if (on && comm.bytesSent() != 300000 * 4)
              failures[static_cast<size_t>(r)] = "bytes sent " + std::to_string(comm.bytesSent());
          } catch (const std::exception& e) {
            failures[static_cast<size_t>(r)] = e.what();
          }
        });
      }
      for (auto& t : threads) t.join();
      for (const auto& f : failures) QVERIFY2(f.empty(), f.c_str());
    }
  }

  // An abort ends this rank's pending all-reduce with kAborted and its peer's with
  // kPeerClosed, at once, and later calls are refused.
  void anAbortEndsBothRanksAtOnce() {
    gloo::rendezvous::HashStore store;
    AbortSignal signal;
    GlooOptions options = test::glooOptions("shm-abort", AllReduceAlgorithm::kSharedMemory);
    GlooOptions aborting = options;
    aborting.abort = &signal;
    std::string peerError;
    std::atomic<bool> peerMayCall{false};
    std::thread peer([&] {
      GlooCommunicator comm(store, 1, 2, options);
      comm.barrier();
      dtlab::test::waitUntil([&] { return peerMayCall.load(); }, std::chrono::seconds(60));
      std::vector<float> data(1000, 1.0f);
      try {
        comm.allReduceSum(data.data(), 1000);
      } catch (const CommError& e) {
        peerError = std::string(toString(e.failure())) + ": " + e.what();
      }
    });
    GlooCommunicator comm(store, 0, 2, aborting);
    comm.barrier();
    // The abort comes once this thread is asleep in its collective (on the shared segment's
    // futex), as /proc tells; a minute at most, then it comes anyway and the test says so.
    const pid_t self = gettid();
    bool asleep = false;
    std::thread aborter([&] {
      asleep = dtlab::test::waitUntil(
          [&] { return comm.collectivesUnderWay() > 0 && dtlab::test::threadAsleep(self); },
          std::chrono::seconds(60), std::chrono::milliseconds(1));
      signal.abort("node1 lost");
    });
    std::vector<float> data(1000, 1.0f);
    std::string message;
    CommFailure failure = CommFailure::kTimeout;
    const auto start = Clock::now();
    try {
      comm.allReduceSum(data.data(), 1000);
    } catch (const CommError& e) {
      failure = e.failure();
      message = e.what();
    }
    const double waited = secondsSince(start);
    aborter.join();
    peerMayCall.store(true);
    peer.join();
    QVERIFY2(asleep, "the all-reduce never went to sleep waiting for its peer");
    QVERIFY2(failure == CommFailure::kAborted, message.c_str());
    QVERIFY2(message.find("all-reduce (shm) of 1000 floats on rank 0 of 2 aborted (node1 lost)") !=
                 std::string::npos,
             message.c_str());
    QVERIFY2(waited < 2.0, std::to_string(waited).c_str());
    QVERIFY2(peerError.rfind("peer_closed", 0) == 0, peerError.c_str());
    QVERIFY2(peerError.find("rank 0 was aborted") != std::string::npos, peerError.c_str());
  }

  // A peer that goes away (its segment destroyed) ends the waiting rank's all-reduce with
  // kPeerClosed naming it; one that never calls ends it with kTimeout after opTimeout.
  void aPeerThatLeavesOrNeverComesIsNamed() {
    {
      gloo::rendezvous::HashStore store;
      auto group = createGroup(store, 2);
      std::thread leaver([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        group[1].reset();
      });
      std::vector<float> data(10, 1.0f);
      std::string message;
      try {
        group[0]->allReduceSum(data.data(), 10);
      } catch (const CommError& e) {
        QVERIFY(e.failure() == CommFailure::kPeerClosed);
        message = e.what();
      }
      leaver.join();
      QVERIFY2(message == "rank 1 left the group", message.c_str());
    }
    {
      gloo::rendezvous::HashStore store;
      auto group = createGroup(store, 3, nullptr, std::chrono::milliseconds(300));
      std::vector<float> data(10, 1.0f);
      const auto start = Clock::now();
      try {
        group[2]->allReduceSum(data.data(), 10);
        QFAIL("an all-reduce without its peers returned");
      } catch (const CommError& e) {
        QVERIFY2(e.failure() == CommFailure::kTimeout, e.what());
      }
      QVERIFY(secondsSince(start) >= 0.29);
      // The timed-out rank marked the group failed: a peer arriving late fails at once.
      try {
        group[0]->allReduceSum(data.data(), 10);
        QFAIL("a failed group ran an all-reduce");
      } catch (const CommError& e) {
        QVERIFY2(std::string(e.what()) == "rank 2 timed out waiting for the others", e.what());
      }
    }
  }
};

QTEST_GUILESS_MAIN(TestShmAllReduce)
#include "test_shm_allreduce.moc"
