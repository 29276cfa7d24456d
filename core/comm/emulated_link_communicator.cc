#include "core/comm/emulated_link_communicator.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/common/check.h"

namespace dtlab::core {

namespace {

int ceilLog2(int n) {
  int steps = 0;
  while ((1 << steps) < n) ++steps;
  return steps;
}

}  // namespace

EmulatedLinkCommunicator::EmulatedLinkCommunicator(std::unique_ptr<Communicator> inner,
                                                   double bandwidthMbps, double latencyMs,
                                                   const AbortSignal* abort)
    : inner_(std::move(inner)),
      bandwidthMbps_(bandwidthMbps),
      latencyMs_(latencyMs),
      abort_(abort) {
  DTLAB_ENFORCE(inner_ != nullptr, "emulated link needs a communicator to wrap");
  DTLAB_ENFORCE(bandwidthMbps >= 0.0, "negative link bandwidth: ", bandwidthMbps, " Mbit/s");
  DTLAB_ENFORCE(latencyMs >= 0.0, "negative link latency: ", latencyMs, " ms");
}

double EmulatedLinkCommunicator::modelledSeconds(Collective collective, int size, int64_t bytes,
                                                 double bandwidthMbps, double latencyMs) {
  if (size <= 1) return 0.0;
  const double n = size;
  const double b = static_cast<double>(bytes);
  double steps = 0.0;
  double wireBytes = 0.0;
  switch (collective) {
    case Collective::kAllReduce:
      steps = 2.0 * (n - 1.0);
      wireBytes = 2.0 * (n - 1.0) / n * b;
      break;
    case Collective::kBroadcast:
      steps = ceilLog2(size);
      wireBytes = steps * b;
      break;
    case Collective::kAllGather:
      steps = n - 1.0;
      wireBytes = (n - 1.0) * b;
      break;
    case Collective::kBarrier:
      steps = ceilLog2(size);
      break;
  }
  double seconds = steps * latencyMs / 1e3;
  if (bandwidthMbps > 0.0) seconds += wireBytes * 8.0 / (bandwidthMbps * 1e6);
  return seconds;
}

template <typename Body>
void EmulatedLinkCommunicator::emulate(Collective collective, int64_t bytes, const Body& body) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  body();
  const auto finished = Clock::now();
  const double modelled = modelledSeconds(collective, size(), bytes, bandwidthMbps_, latencyMs_);
  const auto target =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(modelled));
  if (finished < target) {
    if (abort_ == nullptr) {
      std::this_thread::sleep_until(target);
    } else if (!abort_->sleepFor(target - finished)) {
      throw CommError(CommFailure::kAborted, "emulated link delay on rank " +
                                                 std::to_string(rank()) + " aborted (" +
                                                 abort_->reason() + ")");
    }
  }
  const auto end = Clock::now();
  auto ns = [](Clock::duration d) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
  };
  collectives_.fetch_add(1, std::memory_order_relaxed);
  realNs_.fetch_add(ns(finished - start), std::memory_order_relaxed);
  waitedNs_.fetch_add(ns(end - finished), std::memory_order_relaxed);
  modelledNs_.fetch_add(static_cast<int64_t>(modelled * 1e9), std::memory_order_relaxed);
}

void EmulatedLinkCommunicator::allReduceSum(float* data, int64_t count) {
  // Nothing crosses the wire for an empty buffer, so there is nothing to charge.
  if (count == 0) return inner_->allReduceSum(data, count);
  emulate(Collective::kAllReduce, count * static_cast<int64_t>(sizeof(float)),
          [&] { inner_->allReduceSum(data, count); });
}

void EmulatedLinkCommunicator::allReduceSum16(uint16_t* data, int64_t count, HalfFormat format) {
  if (count == 0) return inner_->allReduceSum16(data, count, format);
  emulate(Collective::kAllReduce, count * static_cast<int64_t>(sizeof(uint16_t)),
          [&] { inner_->allReduceSum16(data, count, format); });
}

// The inner communicator's own average (a GPU's scales on the device), charged as the sum.
void EmulatedLinkCommunicator::allReduceAverage(float* data, int64_t count) {
  if (count == 0) return inner_->allReduceAverage(data, count);
  emulate(Collective::kAllReduce, count * static_cast<int64_t>(sizeof(float)),
          [&] { inner_->allReduceAverage(data, count); });
}

void EmulatedLinkCommunicator::allReduceAfterFence(float* data, int64_t count, bool average,
                                                   int slot) {
  if (count == 0) return inner_->allReduceAfterFence(data, count, average, slot);
  emulate(Collective::kAllReduce, count * static_cast<int64_t>(sizeof(float)),
          [&] { inner_->allReduceAfterFence(data, count, average, slot); });
}

void EmulatedLinkCommunicator::broadcast(float* data, int64_t count, int root) {
  if (count == 0) return inner_->broadcast(data, count, root);
  emulate(Collective::kBroadcast, count * static_cast<int64_t>(sizeof(float)),
          [&] { inner_->broadcast(data, count, root); });
}

void EmulatedLinkCommunicator::allGather(const float* in, int64_t count, float* out) {
  if (count == 0) return inner_->allGather(in, count, out);
  emulate(Collective::kAllGather, count * static_cast<int64_t>(sizeof(float)),
          [&] { inner_->allGather(in, count, out); });
}

void EmulatedLinkCommunicator::barrier() {
  emulate(Collective::kBarrier, 0, [&] { inner_->barrier(); });
}

LinkTimeSplit EmulatedLinkCommunicator::timeSplit() const {
  LinkTimeSplit split;
  split.collectives = collectives_.load(std::memory_order_relaxed);
  split.realSeconds = static_cast<double>(realNs_.load(std::memory_order_relaxed)) / 1e9;
  split.waitedSeconds = static_cast<double>(waitedNs_.load(std::memory_order_relaxed)) / 1e9;
  split.modelledSeconds = static_cast<double>(modelledNs_.load(std::memory_order_relaxed)) / 1e9;
  return split;
}

AllReduceTuning EmulatedLinkCommunicator::tuneAllReduce(float* scratch, int64_t count) {
  AllReduceTuning tuning = inner_->tuneAllReduce(scratch, count);
  for (AllReduceTuning::SizeClass& sizeClass : tuning.sizes) {
    const double modelled = modelledSeconds(Collective::kAllReduce, size(), sizeClass.bytes,
                                            bandwidthMbps_, latencyMs_);
    for (AllReduceTuning::Candidate& c : sizeClass.candidates)
      c.seconds = std::max(c.seconds, modelled);
  }
  return tuning;
}

}  // namespace dtlab::core
