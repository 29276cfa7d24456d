#include "core/comm/emulated_link_communicator.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "core/common/check.h"

namespace dtlab::core {

namespace {

int ceilLog2(int n) {
  int steps = 0;
  while ((1 << steps) < n) ++steps;
  return steps;
}

// What each rank tells the others after a collective. It travels as an all-reduce sum over
// slots (each rank fills its own, the rest stay 0), so it takes the inner communicator's
// fastest path (shared memory between the processes of one host): every value is one a float
// holds exactly and that adds to zeros unchanged. The 64-bit fields go as three 22-bit pieces.
constexpr int kPieceBits = 22;
constexpr int64_t kRecordFloats = 3 + 3 + 2;  // arrival, boot, spent and modelled seconds

void putWide(uint64_t value, float* out) {
  for (int i = 0; i < 3; ++i)
    out[i] = static_cast<float>((value >> (kPieceBits * i)) & ((uint64_t{1} << kPieceBits) - 1));
}

uint64_t getWide(const float* in) {
  uint64_t value = 0;
  for (int i = 0; i < 3; ++i) value |= static_cast<uint64_t>(in[i]) << (kPieceBits * i);
  return value;
}

// The kernel's id of this boot, hashed: processes that read the same one share the monotonic
// clock (network namespaces do; separate machines do not). 0 where it cannot be read.
uint64_t bootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (!(in >> id) || id.empty()) return 0;
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (const char c : id) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h == 0 ? 1 : h;
}

}  // namespace

EmulatedLinkCommunicator::EmulatedLinkCommunicator(std::unique_ptr<Communicator> inner,
                                                   double bandwidthMbps, double latencyMs,
                                                   const AbortSignal* abort, bool fromLastArrival,
                                                   std::optional<uint64_t> clock,
                                                   std::unique_ptr<SharedMemoryAllReduce> exchange)
    : inner_(std::move(inner)),
      bandwidthMbps_(bandwidthMbps),
      latencyMs_(latencyMs),
      abort_(abort),
      fromLastArrival_(fromLastArrival && !inner_->deviceMemory() && inner_->size() > 1),
      boot_(fromLastArrival_ ? (clock ? *clock : bootId()) : 0),
      exchange_(fromLastArrival_ ? std::move(exchange) : nullptr) {
  if (exchange_ && abort_ != nullptr)
    exchangeAbort_ = abort_->onAbort(
        [segment = exchange_.get()](const std::string& reason) { segment->abort(reason); });
  DTLAB_ENFORCE(inner_ != nullptr, "emulated link needs a communicator to wrap");
  DTLAB_ENFORCE(bandwidthMbps >= 0.0, "negative link bandwidth: ", bandwidthMbps, " Mbit/s");
  DTLAB_ENFORCE(latencyMs >= 0.0, "negative link latency: ", latencyMs, " ms");
}

// The abort's registration goes first (declared after the segment): no handler outlives it.
EmulatedLinkCommunicator::~EmulatedLinkCommunicator() = default;

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

void EmulatedLinkCommunicator::exchangeSum(float* data, int64_t count) {
  if (exchange_) return exchange_->allReduceSum(data, count);
  const int64_t sentBefore = inner_->bytesSent();
  const int64_t receivedBefore = inner_->bytesReceived();
  inner_->allReduceSum(data, count);
  exchangeSent_ += inner_->bytesSent() - sentBefore;
  exchangeReceived_ += inner_->bytesReceived() - receivedBefore;
}

EmulatedLinkCommunicator::Clock::time_point EmulatedLinkCommunicator::lastArrival(
    Clock::time_point start, Clock::time_point finished, double& modelled) {
  const auto arrivedNs = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(start.time_since_epoch()).count());
  const float spent = static_cast<float>(std::chrono::duration<double>(finished - start).count());
  exchanged_.assign(static_cast<std::size_t>(kRecordFloats * size()), 0.0f);
  float* own = exchanged_.data() + rank() * kRecordFloats;
  putWide(arrivedNs, own);
  putWide(boot_, own + 3);
  own[6] = spent;
  own[7] = static_cast<float>(modelled);
  exchangeSum(exchanged_.data(), static_cast<int64_t>(exchanged_.size()));
  bool oneClock = boot_ != 0;
  uint64_t lastNs = arrivedNs;
  float least = spent;
  for (int r = 0; r < size(); ++r) {
    const float* theirs = exchanged_.data() + r * kRecordFloats;
    oneClock = oneClock && getWide(theirs + 3) == boot_;
    lastNs = std::max(lastNs, getWide(theirs));
    least = std::min(least, theirs[6]);
    modelled = std::max(modelled, static_cast<double>(theirs[7]));
  }
  const auto last = Clock::time_point(std::chrono::duration_cast<Clock::duration>(
      std::chrono::nanoseconds(static_cast<int64_t>(lastNs))));
  // The real collective could not end before everyone had joined it: a later arrival means
  // the clocks are not one after all.
  if (oneClock && last <= finished) return last;
  return start +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(spent - least));
}

template <typename Body>
void EmulatedLinkCommunicator::emulate(Collective collective, int64_t bytes, const Body& body) {
  const auto start = Clock::now();
  try {
    body();
  } catch (...) {
    // Peers that got through the collective wait for this rank in the exchange: not for long.
    if (exchange_) exchange_->markFailed();
    throw;
  }
  const auto finished = Clock::now();
  double modelled = modelledSeconds(collective, size(), bytes, bandwidthMbps_, latencyMs_);
  // When the modelled time starts: this rank's arrival, or the last rank's.
  const auto from = fromLastArrival_ ? lastArrival(start, finished, modelled) : start;
  const auto target =
      from + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(modelled));
  // On time on average (core/common/punctual_sleep.h): late, it would hold every peer of the
  // next collective back with it.
  const bool slept = sleep_.until(target, [&](Clock::time_point wakeAt) {
    if (abort_ == nullptr) {
      std::this_thread::sleep_until(wakeAt);
      return true;
    }
    return abort_->sleepFor(wakeAt - Clock::now());
  });
  if (!slept)
    throw CommError(CommFailure::kAborted, "emulated link delay on rank " + std::to_string(rank()) +
                                               " aborted (" + abort_->reason() + ")");
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
  const auto classes = static_cast<int64_t>(tuning.sizes.size());
  std::vector<double> modelled;
  for (const AllReduceTuning::SizeClass& sizeClass : tuning.sizes)
    modelled.push_back(modelledSeconds(Collective::kAllReduce, size(), sizeClass.bytes,
                                       bandwidthMbps_, latencyMs_));
  // When every rank wraps (fromLastArrival), the slowest rank's link sets every rank's figures
  // (a ring moves at its pace), so that all of them derive the same bucket size from the
  // tuning; a rank's own link alone would give ranks of different links different buckets,
  // and their collectives would no longer match. The inner tuning is the same on every rank.
  if (fromLastArrival_ && classes > 0) {
    std::vector<float> slots(static_cast<std::size_t>(classes * size()), 0.0f);
    for (int64_t i = 0; i < classes; ++i)
      slots[static_cast<std::size_t>(rank() * classes + i)] =
          static_cast<float>(modelled[static_cast<std::size_t>(i)]);
    exchangeSum(slots.data(), static_cast<int64_t>(slots.size()));
    // From the exchanged figures only (this rank's own in float too): the same bits everywhere.
    std::fill(modelled.begin(), modelled.end(), 0.0);
    for (int r = 0; r < size(); ++r)
      for (int64_t i = 0; i < classes; ++i)
        modelled[static_cast<std::size_t>(i)] =
            std::max(modelled[static_cast<std::size_t>(i)],
                     static_cast<double>(slots[static_cast<std::size_t>(r * classes + i)]));
  }
  for (int64_t i = 0; i < classes; ++i)
    for (AllReduceTuning::Candidate& c : tuning.sizes[static_cast<std::size_t>(i)].candidates)
      c.seconds = std::max(c.seconds, modelled[static_cast<std::size_t>(i)]);
  return tuning;
}

}  // namespace dtlab::core
