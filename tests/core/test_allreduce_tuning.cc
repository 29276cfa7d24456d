// The all-reduce tuning pass: its arithmetic on given timings (nearest size, bucket rule, the
// event's text), and the real pass on Gloo groups of threads: every rank decides alike, the
// communicator follows the decision, results stay exact, the pass's bytes are not counted,
// and an emulated link's measurement is held to its model.
#include <gloo/rendezvous/hash_store.h>

#include <QtTest/QtTest>

#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/comm/allreduce_tuning.h"
#include "core/comm/emulated_link_communicator.h"
#include "core/comm/gloo_communicator.h"
#include "tests/core/gloo_options.h"

using namespace dtlab::core;

namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * 1024;

AllReduceTuning::SizeClass sizeClass(int64_t bytes, std::vector<AllReduceTuning::Candidate> c) {
  AllReduceTuning::SizeClass s;
  s.bytes = bytes;
  s.candidates = std::move(c);
  for (std::size_t i = 0; i < s.candidates.size(); ++i)
    if (s.candidates[i].seconds < s.best().seconds) s.chosen = static_cast<int>(i);
  return s;
}

GlooOptions optionsFor(const std::string& prefix,
                       AllReduceAlgorithm algorithm = AllReduceAlgorithm::kAuto) {
  return test::glooOptions(prefix, algorithm, std::chrono::seconds(60));
}

// Runs body(rank, comm) on `size` threads; returns the first failure's text (empty: none).
std::string runGroup(gloo::rendezvous::Store& store, int size, const GlooOptions& options,
                     const std::function<std::string(int, Communicator&)>& body,
                     bool emulated = false,
                     const std::function<void(int, GlooOptions&)>& perRank = {}) {
  std::mutex mutex;
  std::string failure;
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      std::string message;
      try {
        GlooOptions mine = options;
        if (perRank) perRank(r, mine);
        std::unique_ptr<Communicator> comm =
            std::make_unique<GlooCommunicator>(store, r, size, mine);
        if (emulated)
          comm = std::make_unique<EmulatedLinkCommunicator>(std::move(comm), 100.0, 1.0);
        message = body(r, *comm);
      } catch (const std::exception& e) {
        message = e.what();
      }
      std::lock_guard lock(mutex);
      if (!message.empty() && failure.empty())
        failure = "rank " + std::to_string(r) + ": " + message;
    });
  }
  for (auto& t : threads) t.join();
  return failure;
}

// Tunes up to `bytes` on a buffer of the caller's, as a strategy does on its gradients.
AllReduceTuning tuneUpTo(Communicator& comm, int64_t bytes) {
  std::vector<float> scratch(static_cast<std::size_t>(bytes / 4));
  return comm.tuneAllReduce(scratch.data(), static_cast<int64_t>(scratch.size()));
}

std::string choices(const AllReduceTuning& t) {
  std::string out;
  for (const auto& s : t.sizes) out += byteSizeText(s.bytes) + "=" + s.best().algorithm + " ";
  return out;
}

}  // namespace

class TestAllReduceTuning : public QObject {
  Q_OBJECT
 private slots:
  void sizesAreQuartersUpToTheMessage() {
    QCOMPARE(tuningSizes(0), (std::vector<int64_t>{64 * kKiB}));
    QCOMPARE(tuningSizes(64 * kKiB), (std::vector<int64_t>{64 * kKiB}));
    QCOMPARE(tuningSizes(256 * kKiB - 1), (std::vector<int64_t>{64 * kKiB}));
    QCOMPARE(tuningSizes(256 * kKiB), (std::vector<int64_t>{64 * kKiB, 256 * kKiB}));
    QCOMPARE(tuningSizes(5 * kMiB), (std::vector<int64_t>{64 * kKiB, 256 * kKiB, kMiB, 4 * kMiB}));
    QCOMPARE(tuningSizes(int64_t{1} << 34).back(), 64 * kMiB);
    QCOMPARE(byteSizeText(64 * kKiB), std::string("64 KiB"));
    QCOMPARE(byteSizeText(3 * kMiB / 2), std::string("1.5 MiB"));
    QCOMPARE(byteSizeText(512), std::string("512 B"));
  }

  void nearestSizeOnALogScaleDecides() {
    AllReduceTuning t;
    QVERIFY(t.algorithmFor(kMiB).empty());
    QCOMPARE(t.bucketBytes(12345), int64_t{12345});
    QVERIFY(t.describe().empty());
    t.sizes = {sizeClass(64 * kKiB, {{"own", 1e-4}, {"ring", 2e-4}}),
               sizeClass(256 * kKiB, {{"own", 4e-4}, {"ring", 3e-4}}),
               sizeClass(kMiB, {{"own", 1e-3}, {"ring", 2e-3}})};
    t.seconds = 0.25;
    QCOMPARE(t.algorithmFor(1), std::string("own"));
    QCOMPARE(t.algorithmFor(128 * kKiB), std::string("own"));   // the boundary is the
    QCOMPARE(t.algorithmFor(129 * kKiB), std::string("ring"));  // geometric mean, 128 KiB
    QCOMPARE(t.algorithmFor(512 * kKiB), std::string("ring"));
    QCOMPARE(t.algorithmFor(513 * kKiB), std::string("own"));
    QCOMPARE(t.algorithmFor(int64_t{1} << 30), std::string("own"));
    // Bandwidths 0.66, 0.87, 1.05 GB/s: 75% of the best is 0.79, first reached at 256 KiB.
    QCOMPARE(t.bucketBytes(1), 256 * kKiB);
    QCOMPARE(t.describe(),
             std::string("all-reduce measured in 0.25 s: own 64 KiB (0.66 GB/s), ring 256 KiB "
                         "(0.87 GB/s), own 1 MiB (1.05 GB/s); per call own 0.1 ms at 64 KiB, "
                         "ring 0.3 ms at 256 KiB, own 1 ms at 1 MiB"));
    // Read back from a start event, whatever follows the line there.
    for (const std::string tail : {"",
                                   " (outside the run's clock: later groups of these hosts "
                                   "reuse it); gradient buckets of 256 KiB (bucket_kb), 9 "
                                   "parameters",
                                   "; gradient buckets of 64 KiB (a, b), c"}) {
      const AllReduceTuning calls = readTimedCalls("rank 0/2, " + t.describe() + tail);
      QCOMPARE(calls.sizes.size(), std::size_t{3});
      for (std::size_t i = 0; i < calls.sizes.size(); ++i) {
        QCOMPARE(calls.sizes[i].bytes, t.sizes[i].bytes);
        QCOMPARE(calls.sizes[i].candidates.size(), std::size_t{1});
        QCOMPARE(calls.sizes[i].best().algorithm, t.sizes[i].best().algorithm);
        QCOMPARE(calls.sizes[i].best().seconds, t.sizes[i].best().seconds);
      }
      // The winners' rule reads back too: which algorithm a bucket of 200 KiB goes by.
      QCOMPARE(calls.algorithmFor(200 * kKiB), std::string("ring"));
    }
    // Texts that hold no such line, or a broken one, give none.
    QVERIFY(readTimedCalls("all-reduce measured in 0.25 s: own 64 KiB (0.66 GB/s)").empty());
    QVERIFY(readTimedCalls("x; per call own fast ms at 64 KiB").empty());
    QVERIFY(readTimedCalls("x; per call own 0.1 ms at big").empty());
    // Per-call cost dominating everywhere but at the largest size: the largest is the bucket.
    t.sizes[1].candidates = {{"own", 3e-3}, {"ring", 3e-3}};
    QCOMPARE(t.bucketBytes(1), kMiB);
  }

  // The real pass: two and three ranks, every candidate timed, the same decision everywhere,
  // followed by algorithmFor, exact sums afterwards at every size, nothing counted as traffic.
  void tuningOnARealGroupIsSharedAndFollowed() {
    gloo::rendezvous::HashStore store;
    for (int size : {2, 3}) {
      std::vector<AllReduceTuning> tunings(static_cast<std::size_t>(size));
      const std::string failure = runGroup(
          store, size, optionsFor("tune-" + std::to_string(size)),
          [&](int rank, Communicator& c) -> std::string {
            auto& comm = dynamic_cast<GlooCommunicator&>(c);
            const int64_t sent = comm.bytesSent();
            const int64_t received = comm.bytesReceived();
            tunings[static_cast<std::size_t>(rank)] = tuneUpTo(comm, kMiB);
            const AllReduceTuning& t = tunings[static_cast<std::size_t>(rank)];
            if (comm.bytesSent() != sent || comm.bytesReceived() != received)
              return "the tuning pass's bytes were counted";
            if (t.sizes.size() != 3) return "expected 3 sizes, got " + choices(t);
            for (const auto& s : t.sizes) {
              if (s.candidates.size() != comm.tunedCandidates().size())
                return "expected every candidate";
              for (const auto& c : s.candidates)
                if (!(c.seconds > 0.0)) return c.algorithm + " was not timed";
              const int64_t count = s.bytes / 4;
              if (allReduceAlgorithmName(comm.algorithmFor(count)) != s.best().algorithm)
                return "the communicator does not follow the tuning at " + byteSizeText(s.bytes);
            }
            for (int64_t count : {int64_t{1}, int64_t{1000}, int64_t{70001}, kMiB / 4 + 3}) {
              std::vector<float> data(static_cast<std::size_t>(count));
              for (int64_t i = 0; i < count; ++i)
                data[static_cast<std::size_t>(i)] = static_cast<float>((rank + 1) * (i % 5 + 1));
              comm.allReduceSum(data.data(), count);
              for (int64_t i = 0; i < count; ++i)
                if (data[static_cast<std::size_t>(i)] !=
                    static_cast<float>(size * (size + 1) / 2 * (i % 5 + 1)))
                  return "wrong sum after tuning, count " + std::to_string(count);
            }
            return {};
          });
      QVERIFY2(failure.empty(), failure.c_str());
      for (int r = 1; r < size; ++r)
        QCOMPARE(choices(tunings[static_cast<std::size_t>(r)]), choices(tunings[0]));
      QVERIFY2(tunings[0].describe().rfind("all-reduce measured in ", 0) == 0,
               tunings[0].describe().c_str());
    }
  }

  // Replicas of a synchronous run stay bit-identical only if every rank gets the same bits
  // from each all-reduce: whatever tuning may choose must give them, for any float data and
  // group size, on both sides of the one-hop exchange's size limit.
  void everyTunedCandidateGivesEveryRankTheSameBits() {
    gloo::rendezvous::HashStore store;
    for (AllReduceAlgorithm algorithm : GlooCommunicator::bitIdenticalAlgorithms()) {
      for (int size : {2, 3, 4}) {
        const std::string name =
            std::string(allReduceAlgorithmName(algorithm)) + "-" + std::to_string(size);
        std::vector<std::vector<float>> results(static_cast<std::size_t>(size));
        const std::string failure =
            runGroup(store, size, optionsFor("bits-" + name, algorithm),
                     [&](int rank, Communicator& comm) -> std::string {
                       std::vector<float>& data = results[static_cast<std::size_t>(rank)];
                       std::mt19937 random(static_cast<unsigned>(rank + 1));
                       std::uniform_real_distribution<float> value(-1.0f, 1.0f);
                       for (int64_t count : {int64_t{1000}, int64_t{300001}}) {
                         data.resize(static_cast<std::size_t>(count));
                         for (float& v : data) v = value(random) * 1e-3f + value(random);
                         comm.allReduceSum(data.data(), count);
                       }
                       return {};
                     });
        QVERIFY2(failure.empty(), (name + ": " + failure).c_str());
        for (int r = 1; r < size; ++r)
          QVERIFY2(results[static_cast<std::size_t>(r)] == results[0], name.c_str());
      }
    }
    // The check can fail: Gloo's classic ring accumulates in each rank's own order.
    std::vector<std::vector<float>> ring(3);
    const std::string failure =
        runGroup(store, 3, optionsFor("bits-ring", AllReduceAlgorithm::kRing),
                 [&](int rank, Communicator& comm) -> std::string {
                   std::vector<float>& data = ring[static_cast<std::size_t>(rank)];
                   std::mt19937 random(static_cast<unsigned>(rank + 1));
                   std::uniform_real_distribution<float> value(-1.0f, 1.0f);
                   data.resize(300001);
                   for (float& v : data) v = value(random) * 1e-3f + value(random);
                   comm.allReduceSum(data.data(), static_cast<int64_t>(data.size()));
                   return {};
                 });
    QVERIFY2(failure.empty(), failure.c_str());
    QVERIFY(ring[1] != ring[0] || ring[2] != ring[0]);
  }

  // A later group of the same hosts reuses the pass when every rank kept it; a rank without
  // it (a restarted daemon), a larger gradient than measured, or other hosts measure again,
  // and every rank of a group always ends with the same tuning.
  void laterGroupsOfTheSameHostsReuseThePass() {
    gloo::rendezvous::HashStore store;
    // One per rank, as one per daemon.
    std::vector<std::unique_ptr<AllReduceTuningCache>> caches;
    for (int r = 0; r < 2; ++r) caches.push_back(std::make_unique<AllReduceTuningCache>());
    int groups = 0;
    // Tunes a new group of two up to maxBytes, rank 1 bound to `host1`; both ranks' tunings.
    auto tune = [&](int64_t maxBytes, const std::string& host1) {
      std::vector<AllReduceTuning> out(2);
      const std::string prefix = "cache-" + std::to_string(groups++);
      const std::string failure = runGroup(
          store, 2, optionsFor(prefix),
          [&](int rank, Communicator& comm) -> std::string {
            out[static_cast<std::size_t>(rank)] = tuneUpTo(comm, maxBytes);
            return {};
          },
          false,
          [&](int rank, GlooOptions& o) {
            o.tuningCache = caches[static_cast<std::size_t>(rank)].get();
            if (rank == 1) o.interfaceAddress = host1;
          });
      if (!failure.empty()) throw std::runtime_error(failure);
      if (choices(out[0]) != choices(out[1]) || out[0].reused != out[1].reused)
        throw std::runtime_error("the ranks disagree: " + choices(out[0]) + "/ " + choices(out[1]));
      return out[0];
    };
    const AllReduceTuning first = tune(kMiB, "127.0.0.1");
    QVERIFY(!first.reused);
    const AllReduceTuning second = tune(kMiB, "127.0.0.1");
    QVERIFY(second.reused);
    QCOMPARE(choices(second), choices(first));
    QVERIFY2(second.describe().rfind("all-reduce as an earlier group on these hosts", 0) == 0,
             second.describe().c_str());
    // A smaller gradient takes the sizes it needs from the same pass.
    const AllReduceTuning smaller = tune(256 * kKiB, "127.0.0.1");
    QVERIFY(smaller.reused);
    QCOMPARE(smaller.sizes.size(), std::size_t{2});
    // A larger one was not measured: a new pass, which the next group then reuses.
    QVERIFY(!tune(4 * kMiB, "127.0.0.1").reused);
    QVERIFY(tune(4 * kMiB, "127.0.0.1").reused);
    // Rank 1's daemon restarted: its cache is empty, so both measure.
    caches[1] = std::make_unique<AllReduceTuningCache>();
    QVERIFY(!tune(kMiB, "127.0.0.1").reused);
    // Rank 1 on another host: another group.
    QVERIFY(!tune(kMiB, "127.0.0.2").reused);
    QVERIFY(tune(kMiB, "127.0.0.2").reused);
  }

  void aForcedAlgorithmIsNotTuned() {
    gloo::rendezvous::HashStore store;
    const std::string failure = runGroup(store, 2, optionsFor("forced", AllReduceAlgorithm::kRing),
                                         [](int, Communicator& comm) -> std::string {
                                           if (!tuneUpTo(comm, kMiB).empty())
                                             return "a forced algorithm was tuned";
                                           return {};
                                         });
    QVERIFY2(failure.empty(), failure.c_str());
  }

  // 100 Mbit/s and 1 ms: a 64 KiB all-reduce between two is held to 2 ms + 5.2 ms, far above
  // loopback, so every figure is the model's and the bucket follows the emulated link.
  void anEmulatedLinkIsHeldToItsModel() {
    gloo::rendezvous::HashStore store;
    AllReduceTuning tuning;
    const std::string failure = runGroup(
        store, 2, optionsFor("emulated"),
        [&](int rank, Communicator& comm) -> std::string {
          const AllReduceTuning t = tuneUpTo(comm, 256 * kKiB);
          if (rank == 0) tuning = t;
          return {};
        },
        true);
    QVERIFY2(failure.empty(), failure.c_str());
    QCOMPARE(tuning.sizes.size(), std::size_t{2});
    for (const auto& s : tuning.sizes) {
      const double modelled = EmulatedLinkCommunicator::modelledSeconds(
          EmulatedLinkCommunicator::Collective::kAllReduce, 2, s.bytes, 100.0, 1.0);
      for (const auto& c : s.candidates) QVERIFY(c.seconds >= modelled);
    }
    // 64 KiB: 7.2 ms, 9.1 MB/s; 256 KiB: 23 ms, 11.4 MB/s; 75% of 11.4 is 8.5: 64 KiB.
    QCOMPARE(tuning.bucketBytes(1), 64 * kKiB);
  }
};

QTEST_APPLESS_MAIN(TestAllReduceTuning)
#include "test_allreduce_tuning.moc"
