#include <gloo/barrier.h>
#include <gloo/transport/buffer.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/comm/gloo_group_state.h"
#include "core/comm/gloo_mesh.h"
#include "core/comm/rank_order_sum.h"

namespace dtlab::core {
namespace {

// Slots of our own algorithm's bound buffers (see reservedSlot).
enum class OwnSlot { kReduceScatter = 0, kAllGather = 1, kExchangeEven = 2, kExchangeOdd = 3 };
int ownSlot(OwnSlot kind, int from, int to) {
  return reservedSlot(static_cast<int>(kind), from, to);
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

// Caller buffers whose send buffers the own algorithm keeps (gradient buckets, benchmarks).
constexpr size_t kMaxSendBufferSets = 64;

}  // namespace

// The own all-reduce runs on Gloo's bound buffers (a registered receive area per pair and
// slot; the sender names the offset in it) rather than its unbound buffers, on which every
// send first waits for a ready notification from the receiver. Our first version used
// unbound buffers and stalled for milliseconds at a few hundred KB on loopback (0.06 GB/s
// busbw at 256 KiB with 2 ranks, 0.5 with enlarged socket buffers, against 1.4 now). The
// price is that a receive area must never be overwritten before it has been read: the
// protocol is arranged so that causality guarantees it without extra messages (the reasons
// are given where the buffers are used).
void GlooGroupState::setUpOwn() {
  const auto n = static_cast<size_t>(size);
  warmUpSocketBuffers(context, options.opTimeout);
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

void GlooGroupState::growReduceScatterScratch(int64_t regionFloats) {
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

GlooGroupState::SendBuffers& GlooGroupState::sendBuffersFor(float* data, size_t bytes) {
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
void GlooGroupState::runExchange(float* data, int64_t count) {
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
void GlooGroupState::runOwn(float* data, int64_t count) {
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

}  // namespace dtlab::core
