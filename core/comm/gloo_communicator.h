#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/comm/abort_signal.h"
#include "core/comm/communicator.h"

namespace gloo::rendezvous {
class Store;
}

namespace dtlab::core {

// How GlooCommunicator runs an all-reduce. kAuto runs what tuneAllReduce measured fastest at
// the nearest size, and before any tuning picks by world size and message size from the
// measurements recorded next to GlooCommunicator::algorithmFor (gloo_communicator.cc). The
// others force one implementation, for benchmarks and tests.
enum class AllReduceAlgorithm {
  kAuto,
  // Ours, on Gloo's bound buffers, in place on the caller's buffer: small messages go to
  // every peer in one hop, larger ones take a direct reduce-scatter + all-gather pipelined
  // in 256 KiB segments.
  kOwn,
  // Gloo's classic algorithms (gloo::AllreduceRing, AllreduceRingChunked,
  // AllreduceHalvingDoubling). They register buffers per instance; see the .cc for how
  // instances are cached.
  kRing,
  kRingChunked,
  kHalvingDoubling,
  // Gloo's newer gloo::allreduce() (segmented ring over unbound buffers), in place.
  kGlooAllreduce,
  // Through a shared-memory segment, when every rank is on one host (shm_allreduce.h).
  kSharedMemory,
};

// "auto", "own", "ring", "ring_chunked", "halving_doubling", "gloo_allreduce", "shm".
std::string_view allReduceAlgorithmName(AllReduceAlgorithm algorithm);
// Inverse of allReduceAlgorithmName; throws dtlab::Error listing the valid names.
AllReduceAlgorithm parseAllReduceAlgorithm(std::string_view name);

struct GlooOptions {
  // Local address the TCP transport binds and advertises to peers: on a real cluster an
  // address of this host that the other ranks can reach (never loopback across hosts).
  std::string interfaceAddress = "127.0.0.1";
  // Every key this group writes to the store starts with "<keyPrefix>/", so several jobs or
  // groups can share one store. Ranks of one group must use the same prefix, and a prefix
  // must not be reused by a later group on the same store (stale addresses would be read).
  std::string keyPrefix = "dtlab";
  // How long the constructor may take in all: every rank reaching the rendezvous, then the
  // TCP connections to every peer. A peer that cannot be reached fails it within this time,
  // naming the peer and its address.
  std::chrono::milliseconds connectTimeout{30000};
  // How long one collective waits for a peer before failing.
  std::chrono::milliseconds opTimeout{120000};
  AllReduceAlgorithm allReduceAlgorithm = AllReduceAlgorithm::kAuto;
  // Whether ranks that are all on one host (same boot, network and PID namespaces) may
  // all-reduce through shared memory (kSharedMemory, a candidate of the tuning pass). False
  // keeps every collective on TCP, e.g. to measure the network path on one machine.
  bool sharedMemory = true;
  // Where tuneAllReduce keeps its measurement for later groups of the same hosts (a node
  // daemon's, for its life); null: every group measures. Must outlive the communicator.
  AllReduceTuningCache* tuningCache = nullptr;
  // When it fires, connecting and any pending or later collective fail at once with
  // CommError kAborted, and the connections close so the peers fail too. May be null; must
  // outlive the communicator.
  const AbortSignal* abort = nullptr;
};

// Communicator over Gloo's TCP transport. The constructor is itself collective: every rank
// of the group constructs its GlooCommunicator with the same store (or stores that see the
// same keys), size and options, and it returns once the full mesh of TCP connections is up.
// A rank that does not show up, or cannot be reached, within connectTimeout gives CommError
// naming it. Destruction is collective too: the destructor waits (at most 10 s, less if opTimeout
// is shorter) for every rank to reach its own, so that no rank closes its connections while a peer
// is still finishing the last collective; after a failure or an abort it returns at once.
class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(gloo::rendezvous::Store& store, int rank, int size,
                   const GlooOptions& options = {});
  ~GlooCommunicator() override;
  GlooCommunicator(const GlooCommunicator&) = delete;
  GlooCommunicator& operator=(const GlooCommunicator&) = delete;

  int rank() const override;
  int size() const override;
  void allReduceSum(float* data, int64_t count) override;
  // Gloo's ring (gloo::allreduce) on the 16-bit values.
  void allReduceSum16(uint16_t* data, int64_t count, HalfFormat format) override;
  void broadcast(float* data, int64_t count, int root) override;
  void allGather(const float* in, int64_t count, float* out) override;
  void barrier() override;
  // Times tunedCandidates() (through this class, as a run would use them) on this group's
  // connections; kAuto follows the result. With an algorithm forced in the options it measures
  // nothing.
  AllReduceTuning tuneAllReduce(float* scratch, int64_t count) override;
  // The algorithms whose sums are bit-identical on every rank (so replicas stay identical):
  // our own, gloo::allreduce, Gloo's halving-doubling and shared memory. Gloo's classic ring
  // is not among them (each rank accumulates the buffers in its own order), nor its chunked
  // ring, which never won in any measurement here.
  static std::vector<AllReduceAlgorithm> bitIdenticalAlgorithms();
  // What tuning chooses among on this group: bitIdenticalAlgorithms() without shared memory
  // where the group has none.
  std::vector<AllReduceAlgorithm> tunedCandidates() const;
  // Whether this group all-reduces through shared memory when asked to (every rank on one
  // host, options.sharedMemory); sharedMemoryWhyNot() says why not otherwise.
  bool hasSharedMemory() const;
  const std::string& sharedMemoryWhyNot() const;
  int64_t bytesSent() const override;
  int64_t bytesReceived() const override;

  // Collectives this communicator has begun and not yet returned from or thrown, read from
  // any thread: a watchdog or a test tells a call blocked on a peer from one not made yet
  // (which an abort would refuse instead of interrupting).
  int collectivesUnderWay() const;

  // The algorithm an all-reduce of `count` floats runs with (kAuto resolved).
  AllReduceAlgorithm algorithmFor(int64_t count) const;

 private:
  void allReduceWith(AllReduceAlgorithm algorithm, float* data, int64_t count);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dtlab::core
