#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/comm/abort_signal.h"
#include "core/comm/communicator.h"
#include "core/comm/gloo_options.h"

namespace gloo::rendezvous {
class Store;
}

namespace dtlab::core {

// The state the communicator's parts share (gloo_group_state.h).
struct GlooGroupState;

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

  std::unique_ptr<GlooGroupState> impl_;
};

}  // namespace dtlab::core
