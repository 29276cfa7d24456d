#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "core/comm/abort_signal.h"
#include "core/comm/communicator.h"

namespace dtlab::core {

// What the link emulation has done so far: time spent in the real collectives, time added
// on top of them to reach the modelled duration, and the modelled total.
struct LinkTimeSplit {
  int64_t collectives = 0;
  double realSeconds = 0.0;
  double waitedSeconds = 0.0;
  double modelledSeconds = 0.0;
};

// Makes a fast network look like a slower one: after each collective of the inner
// communicator, waits until the collective's modelled duration on the emulated link has
// passed since it started. A collective that already took longer is not delayed further,
// so the emulation only ever slows down (it cannot make loopback look faster than it is).
//
// The model (n ranks, B bytes of the caller's buffer, L latency per message hop, W link
// bandwidth) charges every collective steps * L + bytes_on_wire / W, where steps and
// bytes_on_wire are those of the algorithm a bandwidth-conscious implementation runs:
//   all-reduce  ring reduce-scatter + all-gather: 2(n-1) steps, 2(n-1)/n * B bytes
//   broadcast   binomial tree (as Gloo's):        ceil(log2 n) steps, ceil(log2 n) * B
//   all-gather  ring, B bytes in per rank:        (n-1) steps, (n-1) * B
//   barrier     dissemination (as Gloo's):        ceil(log2 n) steps, 0 bytes
// It charges the model, not the algorithm the inner communicator actually ran, so results
// stay comparable when the inner algorithm changes. All ranks compute the same duration.
class EmulatedLinkCommunicator final : public Communicator {
 public:
  enum class Collective { kAllReduce, kBroadcast, kAllGather, kBarrier };

  // bandwidthMbps in 10^6 bit/s and latencyMs in milliseconds; 0 means unlimited / none.
  // An abort (may be null) also ends the emulated delay, with CommError kAborted.
  EmulatedLinkCommunicator(std::unique_ptr<Communicator> inner, double bandwidthMbps,
                           double latencyMs, const AbortSignal* abort = nullptr);

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  bool deviceMemory() const override { return inner_->deviceMemory(); }
  void setComputeStream(void* stream) override { inner_->setComputeStream(stream); }
  void allReduceAverage(float* data, int64_t count) override;
  void prepareFences(int fenceCount) override { inner_->prepareFences(fenceCount); }
  void markComputeFence(int slot) override { inner_->markComputeFence(slot); }
  void allReduceAfterFence(float* data, int64_t count, bool average, int slot) override;
  void allReduceSum(float* data, int64_t count) override;
  void allReduceSum16(uint16_t* data, int64_t count, HalfFormat format) override;
  void broadcast(float* data, int64_t count, int root) override;
  void allGather(const float* in, int64_t count, float* out) override;
  void barrier() override;
  // The inner communicator's measurement (its algorithms run on the real transport), each
  // time raised to the modelled duration a collective of that size is held to here, so the
  // bandwidths and the bucket size derived from them are the emulated link's.
  AllReduceTuning tuneAllReduce(float* scratch, int64_t count) override;
  int64_t bytesSent() const override { return inner_->bytesSent(); }
  int64_t bytesReceived() const override { return inner_->bytesReceived(); }

  // Modelled duration in seconds of one collective over `bytes` (see the class comment).
  static double modelledSeconds(Collective collective, int size, int64_t bytes,
                                double bandwidthMbps, double latencyMs);

  LinkTimeSplit timeSplit() const;
  Communicator& inner() { return *inner_; }

 private:
  template <typename Body>
  void emulate(Collective collective, int64_t bytes, const Body& body);

  std::unique_ptr<Communicator> inner_;
  double bandwidthMbps_;
  double latencyMs_;
  const AbortSignal* abort_;
  // Written by the calling thread, readable from a metrics thread.
  std::atomic<int64_t> collectives_{0};
  std::atomic<int64_t> realNs_{0};
  std::atomic<int64_t> waitedNs_{0};
  std::atomic<int64_t> modelledNs_{0};
};

}  // namespace dtlab::core
