#include "core/comm/gloo_communicator.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/buffer.h>
#include <gloo/transport/context.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/comm/gloo_mesh.h"
#include "core/comm/rank_order_sum.h"
#include "core/common/check.h"

namespace dtlab::core {

namespace {

constexpr std::array<std::pair<AllReduceAlgorithm, std::string_view>, 6> kAlgorithmNames = {{
    {AllReduceAlgorithm::kAuto, "auto"},
    {AllReduceAlgorithm::kOwn, "own"},
    {AllReduceAlgorithm::kRing, "ring"},
    {AllReduceAlgorithm::kRingChunked, "ring_chunked"},
    {AllReduceAlgorithm::kHalvingDoubling, "halving_doubling"},
    {AllReduceAlgorithm::kGlooAllreduce, "gloo_allreduce"},
}};

// Slots of our own algorithm's bound buffers. Gloo's classic algorithms count their slots up
// from 0 (Context::nextSlot) and its newer collectives use unbound buffers, which live in a
// separate table, so slots this high cannot collide with either.
//
// The slot also encodes the direction on the pair. Gloo's tcp::Buffer destructor
// unregisters by slot whatever buffer is registered there, so a send buffer destroyed on
// the slot we receive on would take our registered receive area with it.
enum class OwnSlot {
  kReduceScatter = 0,
  kAllGather = 1,
  kExchangeEven = 2,
  kExchangeOdd = 3,
  kWarmUp = 4
};
int ownSlot(OwnSlot kind, int from, int to) {
  constexpr int kOwnSlotBase = 0x40000000;
  return kOwnSlotBase + 2 * static_cast<int>(kind) + (from < to ? 0 : 1);
}
OwnSlot exchangeSlot(int parity) {
  return parity == 0 ? OwnSlot::kExchangeEven : OwnSlot::kExchangeOdd;
}

// Up to this many bytes sent per rank ((n-1) copies of the buffer), the own all-reduce
// exchanges whole buffers in one hop (every rank sends everything to every peer and sums
// locally) instead of reduce-scatter + all-gather in two hops: small messages are bound by
// latency, not bytes. Measured busbw (GB/s), two-hop vs one-hop: 4 ranks, 128 KiB 0.58 vs 0.46.
// Two ranks send the whole buffer either way, so they take one hop up to 1 MiB (2026-12-02:
// 1 MiB 0.83-1.03 against 0.67; 3-4 ranks lost with it at 1 MiB). Not beyond: the areas stay
// registered for the group's life (2 MiB at 1 MiB; 4 MiB did not beat the two hops reliably).
constexpr int64_t kExchangeMaxBytes = 256 * 1024;
constexpr int64_t kPairExchangeMaxBytes = 1024 * 1024;
int64_t exchangeMaxBytes(int size) {
  return size == 2 ? kPairExchangeMaxBytes : kExchangeMaxBytes;
}

// Segment of the pipelined own all-reduce (one send, receive and reduction): small enough to
// overlap reducing one with receiving the next, large enough for a small per-message cost.
// Busbw (GB/s), 2 ranks, 1 / 16 MiB: 64 KiB 0.74 / 0.81, 256 KiB 1.87 / 1.24, 1 MiB 1.97 / 1.02.
constexpr int64_t kOwnSegmentFloats = 64 * 1024;  // 256 KiB

// Socket send buffer every pair gets at construction (see warmUpSocketBuffers).
constexpr int64_t kSocketBufferBytes = int64_t{1} << 20;

// Longest the destructor waits for the peers to reach theirs (see ~GlooCommunicator).
constexpr std::chrono::milliseconds kShutdownTimeout{10000};

constexpr size_t kMaxClassicInstances = 16;  // per (count, algorithm); see runClassic()
// Caller buffers whose send buffers the own algorithm keeps (gradient buckets, benchmarks).
constexpr size_t kMaxSendBufferSets = 64;

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

}  // namespace

std::string_view allReduceAlgorithmName(AllReduceAlgorithm algorithm) {
  for (const auto& [value, name] : kAlgorithmNames) {
    if (value == algorithm) return name;
  }
  return "unknown";
}

AllReduceAlgorithm parseAllReduceAlgorithm(std::string_view name) {
  std::string valid;
  for (const auto& [value, known] : kAlgorithmNames) {
    if (known == name) return value;
    valid += valid.empty() ? "" : ", ";
    valid += known;
  }
  throw Error(detail::concat("unknown all-reduce algorithm '", name, "' (valid: ", valid, ")"));
}

struct GlooCommunicator::Impl {
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
  // Last, so it goes first: no abort handler may run on a half-destroyed Impl.
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
  void warmUpSocketBuffers();
  void setUpOwn();
  void growReduceScatterScratch(int64_t regionFloats);
  SendBuffers& sendBuffersFor(float* data, size_t bytes);
  void runOwn(float* data, int64_t count);
  void runExchange(float* data, int64_t count);
  void runClassic(AllReduceAlgorithm algorithm, float* data, int64_t count);
  void runGlooAllreduce(float* data, int64_t count);
  template <typename Describe, typename Body>
  void guarded(const Describe& describe, const Body& body);
};

template <typename Describe, typename Body>
void GlooCommunicator::Impl::guarded(const Describe& describe, const Body& body) {
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
    const CommFailure kind = wasAborted ? CommFailure::kAborted : classifyGlooFailure(e.what());
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
    throw CommError(kind, message);
  }
}

// Gloo sizes a pair's socket send buffer to the largest bound message sent so far (and
// setting it turns the kernel's autotuning off). Left to the first messages, a buffer sized
// for a small message makes the next slightly larger one wait for a delayed ACK: measured,
// a 128 KiB all-reduce after smaller ones took 40 ms instead of 0.2 ms. One large message
// per pair up front sizes every buffer for all the messages our algorithms send (Gloo's
// unbound collectives on the same pairs profit too).
void GlooCommunicator::Impl::warmUpSocketBuffers() {
  const size_t bytes = static_cast<size_t>(kSocketBufferBytes);
  std::vector<char> outgoing(bytes);
  std::vector<char> incoming(bytes * static_cast<size_t>(size));
  std::vector<BufferPtr> sends, receives;
  for (int p = 0; p < size; ++p) {
    if (p == rank) continue;
    auto& pair = context->getPair(p);
    receives.push_back(pair->createRecvBuffer(ownSlot(OwnSlot::kWarmUp, p, rank),
                                              incoming.data() + bytes * static_cast<size_t>(p),
                                              bytes));
    sends.push_back(
        pair->createSendBuffer(ownSlot(OwnSlot::kWarmUp, rank, p), outgoing.data(), bytes));
  }
  // Every rank registers before anyone sends into it.
  gloo::BarrierOptions opts(context);
  opts.setTimeout(options.opTimeout);
  gloo::barrier(opts);
  for (auto& send : sends) send->send();
  for (auto& receive : receives) receive->waitRecv();
  for (auto& send : sends) send->waitSend();
}

// The own all-reduce runs on Gloo's bound buffers (a registered receive area per pair and
// slot; the sender names the offset in it) rather than its unbound buffers, on which every
// send first waits for a ready notification from the receiver. Our first version used
// unbound buffers and stalled for milliseconds at a few hundred KB on loopback (0.06 GB/s
// busbw at 256 KiB with 2 ranks, 0.5 with enlarged socket buffers, against 1.4 now). The
// price is that a receive area must never be overwritten before it has been read: the
// protocol is arranged so that causality guarantees it without extra messages (the reasons
// are given where the buffers are used).
void GlooCommunicator::Impl::setUpOwn() {
  const auto n = static_cast<size_t>(size);
  warmUpSocketBuffers();
  reduceScatterRecv.resize(n);
  gatherRecv.resize(n);
  sendCache.reserve(kMaxSendBufferSets);
  sources.resize(n);
  // Exchange areas are registered once, here, so that a peer's first exchange can never
  // arrive before its area exists.
  exchangeRegionFloats = std::max<int64_t>(
      1, exchangeMaxBytes(size) / static_cast<int64_t>(sizeof(float)) / (size - 1));
  exchangeScratch.assign(2 * (n - 1) * static_cast<size_t>(exchangeRegionFloats), 0.0f);
  for (int parity = 0; parity < 2; ++parity) {
    exchangeRecv[parity].resize(n);
    for (int p = 0; p < size; ++p) {
      if (p == rank) continue;
      exchangeRecv[parity][p] = context->getPair(p)->createRecvBuffer(
          ownSlot(exchangeSlot(parity), p, rank), exchangeRegion(parity, p),
          static_cast<size_t>(exchangeRegionFloats) * sizeof(float));
    }
  }
}

void GlooCommunicator::Impl::growReduceScatterScratch(int64_t regionFloats) {
  for (auto& buffer : reduceScatterRecv) buffer.reset();
  reduceScatterRegionFloats = regionFloats;
  reduceScatterScratch.assign(static_cast<size_t>(size - 1) * static_cast<size_t>(regionFloats),
                              0.0f);
  for (int p = 0; p < size; ++p) {
    if (p == rank) continue;
    reduceScatterRecv[p] = context->getPair(p)->createRecvBuffer(
        ownSlot(OwnSlot::kReduceScatter, p, rank), reduceScatterRegion(p),
        static_cast<size_t>(regionFloats) * sizeof(float));
  }
  // Every rank grows in the same call (the sizes are the same everywhere). A peer that is
  // ahead must not send into our old, smaller area: nobody sends before everybody has the
  // new one. Growth happens only when a larger buffer than ever before is reduced.
  gloo::BarrierOptions opts(context);
  opts.setTimeout(options.opTimeout);
  gloo::barrier(opts);
}

GlooCommunicator::Impl::SendBuffers& GlooCommunicator::Impl::sendBuffersFor(float* data,
                                                                            size_t bytes) {
  for (auto& cached : sendCache) {
    if (cached.data == data && cached.bytes == bytes) return cached;
  }
  SendBuffers created;
  created.data = data;
  created.bytes = bytes;
  const auto n = static_cast<size_t>(size);
  created.reduceScatter.resize(n);
  created.gather.resize(n);
  created.exchange[0].resize(n);
  created.exchange[1].resize(n);
  for (int p = 0; p < size; ++p) {
    if (p == rank) continue;
    auto& pair = context->getPair(p);
    created.reduceScatter[p] =
        pair->createSendBuffer(ownSlot(OwnSlot::kReduceScatter, rank, p), data, bytes);
    created.gather[p] = pair->createSendBuffer(ownSlot(OwnSlot::kAllGather, rank, p), data, bytes);
    for (int parity = 0; parity < 2; ++parity) {
      created.exchange[parity][p] =
          pair->createSendBuffer(ownSlot(exchangeSlot(parity), rank, p), data, bytes);
    }
  }
  if (sendCache.size() < kMaxSendBufferSets) {
    sendCache.push_back(std::move(created));
    return sendCache.back();
  }
  SendBuffers& victim = sendCache[nextSendVictim];
  nextSendVictim = (nextSendVictim + 1) % kMaxSendBufferSets;
  victim = std::move(created);
  return victim;
}

// One hop: every rank sends its whole buffer into every peer's exchange area and sums the n
// buffers locally in rank order (so every rank computes bit-identical sums). The area
// alternates with the call parity: a peer can be at most one exchange ahead of us (its next
// one needs our next data, which we send only after we finished reading this one), so it
// only ever writes the area we are not reading.
void GlooCommunicator::Impl::runExchange(float* data, int64_t count) {
  const size_t bytes = static_cast<size_t>(count) * sizeof(float);
  const int parity = static_cast<int>(exchangeCalls++ & 1);
  auto& send = sendBuffersFor(data, bytes).exchange[parity];
  for (int k = 1; k < size; ++k) send[(rank + k) % size]->send(0, bytes, 0);
  for (int p = 0; p < size; ++p) {
    if (p == rank) {
      sources[p] = data;
      continue;
    }
    exchangeRecv[parity][p]->waitRecv();
    sources[p] = exchangeRegion(parity, p);
  }
  // The sends read `data`; only once they are done may the sum overwrite it.
  for (int p = 0; p < size; ++p) {
    if (p != rank) send[p]->waitSend();
  }
  sumInRankOrder(data, sources.data(), size, count);
  bytesSent.fetch_add(static_cast<int64_t>(bytes) * (size - 1), std::memory_order_relaxed);
  bytesReceived.fetch_add(static_cast<int64_t>(bytes) * (size - 1), std::memory_order_relaxed);
}

// Direct reduce-scatter + all-gather, pipelined in segments. Chunk j of the buffer belongs to
// rank j. Every rank sends chunk j straight into rank j's reduce-scatter area for it (not
// around a ring); rank j sums the n contributions segment by segment, in rank order, and
// sends each finished segment straight into every peer's buffer. Bytes on the wire per rank
// are 2(n-1)/n of the buffer, as for a ring, but the data takes 2 hops instead of 2(n-1).
//
// Why nothing is overwritten early:
// - Our reduce-scatter area is reused by the next call, but a peer cannot start sending the
//   next call's data before it has finished this call, which needs our last all-gather
//   segment, which we send after the last reduction that reads the area.
// - The caller's buffer receives the all-gather while our reduce-scatter sends read from
//   it. Segment s of chunk j arrives only after rank j has our segment s of the same bytes,
//   so the kernel has copied them out of our buffer already.
// - The all-gather registration over the caller's buffer outlives the call, but no data
//   arrives for it between calls: a call returns only once all its all-gather data is in,
//   and a peer's data for the next call needs our reduce-scatter data for it, which we send
//   after pointing the registration at that call's buffer.
void GlooCommunicator::Impl::runOwn(float* data, int64_t count) {
  const int n = size;
  const size_t bytes = static_cast<size_t>(count) * sizeof(float);
  if (static_cast<int64_t>(bytes) * (n - 1) <= exchangeMaxBytes(n)) {
    runExchange(data, count);
    return;
  }
  auto chunkBegin = [&](int j) { return static_cast<int64_t>(j) * count / n; };
  auto chunkLength = [&](int j) { return chunkBegin(j + 1) - chunkBegin(j); };
  auto segments = [](int64_t length) {
    return (length + kOwnSegmentFloats - 1) / kOwnSegmentFloats;
  };
  auto segmentLength = [](int64_t length, int64_t s) {
    return std::min(kOwnSegmentFloats, length - s * kOwnSegmentFloats);
  };
  auto byteCount = [](int64_t floats) { return static_cast<size_t>(floats) * sizeof(float); };

  const int64_t largestChunk = (count + n - 1) / n;
  if (largestChunk > reduceScatterRegionFloats) growReduceScatterScratch(largestChunk);

  if (gatherRecvData != data || gatherRecvBytes != bytes) {
    for (int p = 0; p < n; ++p) {
      if (p == rank) continue;
      gatherRecv[p].reset();  // unregisters the slot before the new buffer claims it
      gatherRecv[p] =
          context->getPair(p)->createRecvBuffer(ownSlot(OwnSlot::kAllGather, p, rank), data, bytes);
    }
    gatherRecvData = data;
    gatherRecvBytes = bytes;
  }
  SendBuffers& send = sendBuffersFor(data, bytes);
  auto& reduceScatterSend = send.reduceScatter;
  auto& gatherSend = send.gather;

  // Reduce-scatter sends, segment-major so every peer can start reducing early, starting at
  // the next rank so the ranks do not all send to rank 0 first.
  int64_t sentFloats = 0;
  int64_t maxSegments = 0;
  for (int p = 0; p < n; ++p) maxSegments = std::max(maxSegments, segments(chunkLength(p)));
  for (int64_t s = 0; s < maxSegments; ++s) {
    for (int k = 1; k < n; ++k) {
      const int p = (rank + k) % n;
      const int64_t length = chunkLength(p);
      if (s >= segments(length)) continue;
      const int64_t segment = segmentLength(length, s);
      reduceScatterSend[p]->send(byteCount(chunkBegin(p) + s * kOwnSegmentFloats),
                                 byteCount(segment), byteCount(s * kOwnSegmentFloats));
      sentFloats += segment;
    }
  }

  // Reduce our chunk as the contributions arrive (per peer in order) and send each finished
  // segment to every peer, at the same offset in its buffer.
  const int64_t myBegin = chunkBegin(rank);
  const int64_t myLength = chunkLength(rank);
  const int64_t mySegments = segments(myLength);
  for (int64_t s = 0; s < mySegments; ++s) {
    const int64_t offset = myBegin + s * kOwnSegmentFloats;
    const int64_t segment = segmentLength(myLength, s);
    for (int p = 0; p < n; ++p) {
      if (p == rank) {
        sources[p] = data + offset;
        continue;
      }
      reduceScatterRecv[p]->waitRecv();
      sources[p] = reduceScatterRegion(p) + s * kOwnSegmentFloats;
    }
    sumInRankOrder(data + offset, sources.data(), n, segment);
    for (int k = 1; k < n; ++k) {
      const int p = (rank + k) % n;
      gatherSend[p]->send(byteCount(offset), byteCount(segment), byteCount(offset));
      sentFloats += segment;
    }
  }

  // Everything must complete before returning: the caller may free or reuse its buffer, and
  // a completion left over would be counted by the next call.
  for (int p = 0; p < n; ++p) {
    if (p == rank) continue;
    for (int64_t s = segments(chunkLength(p)); s > 0; --s) gatherRecv[p]->waitRecv();
    for (int64_t s = segments(chunkLength(p)); s > 0; --s) reduceScatterSend[p]->waitSend();
    for (int64_t s = mySegments; s > 0; --s) gatherSend[p]->waitSend();
  }
  // Every chunk a rank sends, another receives, and the pattern is the same on every rank.
  bytesSent.fetch_add(sentFloats * static_cast<int64_t>(sizeof(float)), std::memory_order_relaxed);
  bytesReceived.fetch_add(sentFloats * static_cast<int64_t>(sizeof(float)),
                          std::memory_order_relaxed);
}

void GlooCommunicator::Impl::runClassic(AllReduceAlgorithm algorithm, float* data, int64_t count) {
  DTLAB_ENFORCE(count <= INT_MAX / static_cast<int64_t>(sizeof(float)),
                "Gloo's classic algorithms address at most 2 GiB: ", count, " floats");
  ClassicInstance* entry = nullptr;
  for (auto& candidate : classic) {
    if (candidate.algorithm == algorithm && candidate.count == count) entry = &candidate;
  }
  if (entry == nullptr) {
    if (classic.size() >= kMaxClassicInstances) {
      auto oldest = std::min_element(
          classic.begin(), classic.end(),
          [](const ClassicInstance& a, const ClassicInstance& b) { return a.lastUse < b.lastUse; });
      classic.erase(oldest);
    }
    ClassicInstance created;
    created.algorithm = algorithm;
    created.count = count;
    created.staging.assign(static_cast<size_t>(count), 0.0f);
    const std::vector<float*> ptrs{created.staging.data()};
    const int elements = static_cast<int>(count);
    std::shared_ptr<gloo::Context> base = context;
    switch (algorithm) {
      case AllReduceAlgorithm::kRing:
        created.instance = std::make_unique<gloo::AllreduceRing<float>>(base, ptrs, elements);
        break;
      case AllReduceAlgorithm::kRingChunked:
        created.instance =
            std::make_unique<gloo::AllreduceRingChunked<float>>(base, ptrs, elements);
        break;
      case AllReduceAlgorithm::kHalvingDoubling:
        created.instance =
            std::make_unique<gloo::AllreduceHalvingDoubling<float>>(base, ptrs, elements);
        break;
      default:
        DTLAB_ENFORCE(false, "not a classic Gloo algorithm: ", allReduceAlgorithmName(algorithm));
    }
    classic.push_back(std::move(created));
    entry = &classic.back();
  }
  entry->lastUse = ++useClock;
  std::memcpy(entry->staging.data(), data, static_cast<size_t>(count) * sizeof(float));
  entry->instance->run();
  std::memcpy(data, entry->staging.data(), static_cast<size_t>(count) * sizeof(float));
  // The ring variants send 2(n-1)/n of the buffer per rank; halving-doubling the same for
  // power-of-two groups. Good enough for the metric; the exact figure is Gloo's business.
  const int64_t bytes = count * static_cast<int64_t>(sizeof(float));
  bytesSent.fetch_add(2 * (size - 1) * bytes / size, std::memory_order_relaxed);
  bytesReceived.fetch_add(2 * (size - 1) * bytes / size, std::memory_order_relaxed);
}

void GlooCommunicator::Impl::runGlooAllreduce(float* data, int64_t count) {
  gloo::AllreduceOptions opts(context);
  opts.setOutput(data, static_cast<size_t>(count));
  opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
  opts.setReduceFunction(
      static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
  opts.setTimeout(options.opTimeout);
  gloo::allreduce(opts);
  const int64_t bytes = count * static_cast<int64_t>(sizeof(float));
  bytesSent.fetch_add(2 * (size - 1) * bytes / size, std::memory_order_relaxed);
  bytesReceived.fetch_add(2 * (size - 1) * bytes / size, std::memory_order_relaxed);
}

GlooCommunicator::GlooCommunicator(gloo::rendezvous::Store& store, int rank, int size,
                                   const GlooOptions& options)
    : impl_(std::make_unique<Impl>()) {
  DTLAB_ENFORCE(size >= 1, "group size must be positive: ", size);
  DTLAB_ENFORCE(rank >= 0 && rank < size, "rank ", rank, " outside a group of ", size);
  DTLAB_ENFORCE(options.connectTimeout.count() > 0 && options.opTimeout.count() > 0,
                "timeouts must be positive");
  Impl& impl = *impl_;
  impl.rank = rank;
  impl.size = size;
  impl.options = options;
  if (size == 1) return;  // nothing to connect; every collective is local

  if (options.abort != nullptr) {
    impl.registration =
        options.abort->onAbort([&impl](const std::string& reason) { impl.mesh.abort(reason); });
  }
  const auto deadline = std::chrono::steady_clock::now() + options.connectTimeout;
  gloo::rendezvous::PrefixStore prefixed(options.keyPrefix, store);
  joinRendezvous(prefixed, rank, size, options.keyPrefix, options.connectTimeout, deadline);
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = options.interfaceAddress;
    impl.device = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    throw Error(detail::concat("cannot bind the collective transport to '",
                               options.interfaceAddress, "' on rank ", rank,
                               " (is it an address of this host?): ", e.what()));
  }
  impl.context = std::make_shared<MeshContext>(rank, size);
  // Pairs take this as their timeout when created: every wait on a bound buffer (ours and
  // Gloo's classic algorithms') uses it. The unbound collectives get opTimeout explicitly.
  impl.context->setTimeout(options.opTimeout);
  impl.context->adopt(
      impl.device, impl.mesh.connect(prefixed, impl.device, rank, size, options.opTimeout,
                                     options.connectTimeout, deadline, options.interfaceAddress));
  impl.guarded([] { return std::string("warming up the connections"); }, [&] { impl.setUpOwn(); });
}

GlooCommunicator::~GlooCommunicator() {
  Impl& impl = *impl_;
  if (impl.size == 1 || impl.context == nullptr || !impl.brokenBy.empty() || impl.mesh.aborted())
    return;
  // A peer may still be collecting the last collective's data from us, and Gloo fails even
  // a wait whose data has already arrived once the pair has seen the other side close. So
  // nobody closes before everybody is done: a barrier, bounded so that a peer that is gone
  // or slow to shut down costs at most kShutdownTimeout. Its failure changes nothing.
  try {
    gloo::BarrierOptions opts(impl.context);
    opts.setTimeout(std::min(impl.options.opTimeout, kShutdownTimeout));
    gloo::barrier(opts);
  } catch (const std::exception&) {
    // Shutting down anyway.
  }
}

int GlooCommunicator::rank() const {
  return impl_->rank;
}
int GlooCommunicator::size() const {
  return impl_->size;
}

int GlooCommunicator::collectivesUnderWay() const {
  return impl_->underWay.load();
}

int64_t GlooCommunicator::bytesSent() const {
  return impl_->bytesSent.load(std::memory_order_relaxed);
}

int64_t GlooCommunicator::bytesReceived() const {
  return impl_->bytesReceived.load(std::memory_order_relaxed);
}

// Auto selection follows tuneAllReduce once it ran. Before (groups nobody tuned: tests, small
// collectives) a rule from busbw on loopback on the 2-core machine (2026-11): ours ahead with 2
// ranks; from 4 MiB with 3+ ranks Gloo's segmented ring (neighbour-only traffic contends less
// on few cores). The winner between 256 KiB and 4 MiB moved with the day and load: runs tune.
AllReduceAlgorithm GlooCommunicator::algorithmFor(int64_t count) const {
  if (impl_->options.allReduceAlgorithm != AllReduceAlgorithm::kAuto) {
    return impl_->options.allReduceAlgorithm;
  }
  if (!impl_->tuning.empty())
    return impl_->tunedAlgorithms[impl_->tuning.sizeIndexFor(count * int64_t{sizeof(float)})];
  constexpr int64_t kRingFromBytes = int64_t{4} << 20;
  if (impl_->size >= 3 && count * static_cast<int64_t>(sizeof(float)) >= kRingFromBytes) {
    return AllReduceAlgorithm::kGlooAllreduce;
  }
  return AllReduceAlgorithm::kOwn;
}

void GlooCommunicator::allReduceSum(float* data, int64_t count) {
  DTLAB_ENFORCE(count >= 0, "negative element count: ", count);
  DTLAB_ENFORCE(count == 0 || data != nullptr, "null buffer for ", count, " floats");
  if (impl_->size == 1 || count == 0) return;
  allReduceWith(algorithmFor(count), data, count);
}

void GlooCommunicator::allReduceWith(AllReduceAlgorithm algorithm, float* data, int64_t count) {
  Impl& impl = *impl_;
  impl.guarded(
      [&] {
        return detail::concat("all-reduce (", allReduceAlgorithmName(algorithm), ") of ", count,
                              " floats");
      },
      [&] {
        switch (algorithm) {
          case AllReduceAlgorithm::kOwn:
          case AllReduceAlgorithm::kAuto:
            impl.runOwn(data, count);
            break;
          case AllReduceAlgorithm::kGlooAllreduce:
            impl.runGlooAllreduce(data, count);
            break;
          default:
            impl.runClassic(algorithm, data, count);
        }
      });
}

std::vector<AllReduceAlgorithm> GlooCommunicator::tunedCandidates() {
  return {AllReduceAlgorithm::kOwn, AllReduceAlgorithm::kGlooAllreduce,
          AllReduceAlgorithm::kHalvingDoubling};
}

AllReduceTuning GlooCommunicator::tuneAllReduce(float* scratch, int64_t count) {
  Impl& impl = *impl_;
  if (impl.size == 1 || impl.options.allReduceAlgorithm != AllReduceAlgorithm::kAuto) return {};
  const std::vector<AllReduceAlgorithm> candidates = tunedCandidates();
  AllReduceProbe probe;
  for (AllReduceAlgorithm a : candidates) probe.candidates.emplace_back(allReduceAlgorithmName(a));
  probe.run = [&](int candidate, float* data, int64_t count) {
    allReduceWith(candidates[static_cast<std::size_t>(candidate)], data, count);
  };
  probe.barrier = [this] { barrier(); };
  // Each size's classic instances (staging buffers of that size) go before the next size;
  // every rank drops them at the same point, and their slots are never reused.
  probe.release = [&] { impl.classic.clear(); };
  probe.gather = [&](const std::vector<float>& values) {
    std::vector<float> all(values.size() * static_cast<std::size_t>(impl.size));
    allGather(values.data(), static_cast<int64_t>(values.size()), all.data());
    return all;
  };
  const int64_t sentBefore = impl.bytesSent.load();
  const int64_t receivedBefore = impl.bytesReceived.load();
  impl.tuning = core::tuneAllReduce(probe, scratch, count, impl.options.tuningCache,
                                    impl.options.interfaceAddress);
  impl.bytesSent.store(sentBefore);
  impl.bytesReceived.store(receivedBefore);
  impl.tunedAlgorithms.clear();  // names parsed once here, not on every all-reduce
  for (const AllReduceTuning::SizeClass& s : impl.tuning.sizes)
    impl.tunedAlgorithms.push_back(parseAllReduceAlgorithm(s.best().algorithm));
  return impl.tuning;
}

void GlooCommunicator::broadcast(float* data, int64_t count, int root) {
  DTLAB_ENFORCE(count >= 0, "negative element count: ", count);
  DTLAB_ENFORCE(root >= 0 && root < impl_->size, "broadcast root ", root, " outside a group of ",
                impl_->size);
  DTLAB_ENFORCE(count == 0 || data != nullptr, "null buffer for ", count, " floats");
  Impl& impl = *impl_;
  if (impl.size == 1 || count == 0) return;
  impl.guarded([&] { return detail::concat("broadcast of ", count, " floats from rank ", root); },
               [&] {
                 gloo::BroadcastOptions opts(impl.context);
                 opts.setOutput(data, static_cast<size_t>(count));
                 opts.setRoot(root);
                 opts.setTimeout(impl.options.opTimeout);
                 gloo::broadcast(opts);
               });
  // Gloo broadcasts along a binomial tree (gloo/broadcast.cc): count this rank's sends.
  const int n = impl.size;
  const int virtualRank = (impl.rank - root + n) % n;
  int children = 0;
  int dim = 0;
  while ((1 << dim) < n) ++dim;
  int mask = (1 << dim) - 1;
  for (int i = 0; i < dim; ++i) {
    mask ^= 1 << i;
    if ((virtualRank & mask) != 0) continue;
    const int virtualPeer = virtualRank ^ (1 << i);
    if (virtualPeer >= n) continue;
    if ((virtualRank & (1 << i)) == 0) ++children;
  }
  impl.bytesSent.fetch_add(children * count * static_cast<int64_t>(sizeof(float)),
                           std::memory_order_relaxed);
  if (virtualRank != 0)  // everyone but the root receives the buffer once, from its parent
    impl.bytesReceived.fetch_add(count * static_cast<int64_t>(sizeof(float)),
                                 std::memory_order_relaxed);
}

void GlooCommunicator::allGather(const float* in, int64_t count, float* out) {
  DTLAB_ENFORCE(count >= 0, "negative element count: ", count);
  DTLAB_ENFORCE(count == 0 || (in != nullptr && out != nullptr), "null buffer for ", count,
                " floats");
  Impl& impl = *impl_;
  const int64_t total = count * impl.size;
  DTLAB_ENFORCE(count == 0 || in + count <= out || out + total <= in,
                "all-gather input and output overlap");
  if (count == 0) return;
  if (impl.size == 1) {
    std::memcpy(out, in, static_cast<size_t>(count) * sizeof(float));
    return;
  }
  impl.guarded([&] { return detail::concat("all-gather of ", count, " floats per rank"); },
               [&] {
                 gloo::AllgatherOptions opts(impl.context);
                 opts.setInput(const_cast<float*>(in), static_cast<size_t>(count));
                 opts.setOutput(out, static_cast<size_t>(total));
                 opts.setTimeout(impl.options.opTimeout);
                 gloo::allgather(opts);
               });
  impl.bytesSent.fetch_add((impl.size - 1) * count * static_cast<int64_t>(sizeof(float)),
                           std::memory_order_relaxed);
  impl.bytesReceived.fetch_add((impl.size - 1) * count * static_cast<int64_t>(sizeof(float)),
                               std::memory_order_relaxed);
}

void GlooCommunicator::barrier() {
  Impl& impl = *impl_;
  if (impl.size == 1) return;
  impl.guarded([] { return std::string("barrier"); },
               [&] {
                 gloo::BarrierOptions opts(impl.context);
                 opts.setTimeout(impl.options.opTimeout);
                 gloo::barrier(opts);
               });
}

}  // namespace dtlab::core
