#pragma once
// How a GlooCommunicator (gloo_communicator.h) forms its group and runs its all-reduce.
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace dtlab::core {

class AbortSignal;           // core/comm/abort_signal.h
class AllReduceTuningCache;  // core/comm/allreduce_tuning.h

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

}  // namespace dtlab::core
