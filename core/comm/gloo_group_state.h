#pragma once
// GlooCommunicator's state, shared by its parts: gloo_communicator.cc (the group, the
// collectives, Gloo's algorithms) and gloo_own_allreduce.cc (our own all-reduce on Gloo's
// bound buffers). Internal to core/comm.

#include <gloo/algorithm.h>
#include <gloo/context.h>
#include <gloo/transport/buffer.h>
#include <gloo/transport/context.h>
#include <gloo/transport/device.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "core/comm/abort_signal.h"
#include "core/comm/allreduce_tuning.h"
#include "core/comm/communicator.h"
#include "core/comm/gloo_mesh.h"
#include "core/comm/gloo_options.h"
#include "core/comm/shm_allreduce.h"
#include "core/common/check.h"

namespace dtlab::core {
// A gloo::Context whose pairs we create and connect ourselves (Gloo's connectFullMesh keeps
// them out of reach until it returns, so a connect could not be aborted, and it waits up to
// five times the pair timeout for each peer).
class MeshContext final : public gloo::Context {
 public:
  using gloo::Context::Context;
  void adopt(std::shared_ptr<gloo::transport::Device> device,
             std::shared_ptr<gloo::transport::Context> transport) {
    device_ = std::move(device);
    transportContext_ = std::move(transport);
  }
};

struct GlooGroupState {
  int rank = 0;
  int size = 1;
  GlooOptions options;
  // Declared before everything registered on the context's pairs, which must go first.
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<MeshContext> context;
  std::atomic<int64_t> bytesSent{0};
  std::atomic<int64_t> bytesReceived{0};
  // Collectives past the refusal checks and not yet returned (see collectivesUnderWay()).
  std::atomic<int> underWay{0};
  // First failure; every later call refuses to run (the group is out of step).
  std::string brokenBy;
  CommFailure brokenKind = CommFailure::kPeerClosed;

  // The pairs, which any thread may fail (an abort) from the moment they exist.
  GlooMesh mesh;

  // Own algorithm, on Gloo's bound buffers (see setUpOwn). Receive areas that stay
  // registered: one reduce-scatter region per peer (grows with the largest chunk seen), and
  // two exchange regions per peer (one per call parity, registered once).
  using BufferPtr = std::unique_ptr<gloo::transport::Buffer>;
  std::vector<float> reduceScatterScratch;
  int64_t reduceScatterRegionFloats = 0;
  std::vector<BufferPtr> reduceScatterRecv;  // by rank
  std::vector<float> exchangeScratch;
  int64_t exchangeRegionFloats = 0;
  std::array<std::vector<BufferPtr>, 2> exchangeRecv;  // by parity, by rank
  uint64_t exchangeCalls = 0;
  // The all-gather lands in the caller's buffer: registered over the buffer of the latest
  // call, replaced when a call brings another (see runOwn for why that is safe).
  float* gatherRecvData = nullptr;
  size_t gatherRecvBytes = 0;
  std::vector<BufferPtr> gatherRecv;  // by rank
  // Send buffers over callers' buffers, cached by address: they are never registered (only
  // receive buffers are), so unlike Gloo's classic algorithms no rank has to agree with
  // another about them. Creating and destroying them per call costs the pair's lock, which
  // Gloo's I/O thread spins on.
  struct SendBuffers {
    float* data = nullptr;
    size_t bytes = 0;
    std::vector<BufferPtr> reduceScatter, gather;    // by rank
    std::array<std::vector<BufferPtr>, 2> exchange;  // by parity, by rank
  };
  std::vector<SendBuffers> sendCache;
  size_t nextSendVictim = 0;
  std::vector<const float*> sources;  // by rank

  // Gloo's classic algorithms take slots from Context::nextSlot() when constructed, so every
  // rank must construct the same instances in the same order. Keying a cache by the
  // caller's pointer would break that (a reused address hits on one rank and misses on
  // another, and the slots diverge into a hang). So instances are keyed by what all ranks
  // agree on, (algorithm, count), run on a staging buffer they own, and are evicted least
  // recently used, which is also the same on every rank.
  struct ClassicInstance {
    AllReduceAlgorithm algorithm;
    int64_t count = 0;
    uint64_t lastUse = 0;
    std::vector<float> staging;
    std::unique_ptr<gloo::Algorithm> instance;
  };
  std::vector<ClassicInstance> classic;
  uint64_t useClock = 0;
  // What tuneAllReduce measured, and each measured size's winner: kAuto follows them.
  AllReduceTuning tuning;
  std::vector<AllReduceAlgorithm> tunedAlgorithms;  // by index in tuning.sizes
  // Every rank on one host: the shared-memory all-reduce. Published through the atomic once
  // built, for the abort handler, which may run on any thread from the start.
  std::unique_ptr<SharedMemoryAllReduce> shm;
  std::atomic<SharedMemoryAllReduce*> shmForAbort{nullptr};
  std::string shmWhyNot = "not set up";
  // Last, so it goes first: no abort handler may run on a half-destroyed state.
  AbortSignal::Registration registration;

  // Scratch regions are laid out by peer, skipping our own rank.
  size_t peerIndex(int p) const { return static_cast<size_t>(p < rank ? p : p - 1); }
  float* reduceScatterRegion(int p) {
    return reduceScatterScratch.data() +
           peerIndex(p) * static_cast<size_t>(reduceScatterRegionFloats);
  }
  float* exchangeRegion(int parity, int p) {
    return exchangeScratch.data() +
           (static_cast<size_t>(parity) * static_cast<size_t>(size - 1) + peerIndex(p)) *
               static_cast<size_t>(exchangeRegionFloats);
  }
  void setUpOwn();
  void growReduceScatterScratch(int64_t regionFloats);
  SendBuffers& sendBuffersFor(float* data, size_t bytes);
  void runOwn(float* data, int64_t count);
  void runExchange(float* data, int64_t count);
  void runClassic(AllReduceAlgorithm algorithm, float* data, int64_t count);
  void runGlooAllreduce(float* data, int64_t count);
  void runShared(float* data, int64_t count);
  template <typename Describe, typename Body>
  void guarded(const Describe& describe, const Body& body);
};

template <typename Describe, typename Body>
void GlooGroupState::guarded(const Describe& describe, const Body& body) {
  if (mesh.aborted()) {
    throw CommError(CommFailure::kAborted,
                    detail::concat(describe(), " on rank ", rank, " refused: aborted (",
                                   mesh.abortReason(), ")"));
  }
  if (!brokenBy.empty()) {
    throw CommError(brokenKind,
                    detail::concat(describe(), " on rank ", rank,
                                   " refused: the group is unusable after an earlier failure (",
                                   brokenBy, ")"));
  }
  ++underWay;
  struct Leave {
    std::atomic<int>& count;
    ~Leave() { --count; }
  } leave{underWay};
  try {
    body();
  } catch (const std::exception& e) {
    const bool wasAborted = mesh.aborted();
    const auto* commError = dynamic_cast<const CommError*>(&e);
    const CommFailure kind = wasAborted             ? CommFailure::kAborted
                             : commError != nullptr ? commError->failure()
                                                    : classifyGlooFailure(e.what());
    const std::string message =
        wasAborted
            ? detail::concat(describe(), " on rank ", rank, " of ", size, " aborted (",
                             mesh.abortReason(), ")")
            : detail::concat(describe(), " on rank ", rank, " of ", size, " failed: ", e.what());
    brokenBy = message;
    brokenKind = kind;
    // Peers may be half way through this collective. Failing every pair stops Gloo's I/O
    // thread from writing into buffers registered for it (some over the caller's memory)
    // and lets the peers fail now instead of at their timeout.
    mesh.fail(message);
    if (shm) shm->markFailed();
    throw CommError(kind, message);
  }
}

}  // namespace dtlab::core
