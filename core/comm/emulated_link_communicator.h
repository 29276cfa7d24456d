#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/comm/abort_signal.h"
#include "core/comm/communicator.h"
#include "core/comm/shm_allreduce.h"
#include "core/common/punctual_sleep.h"

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
// passed since it started (which start: below). A collective that already took longer is not
// delayed further, so the emulation only ever slows down (it cannot make loopback look faster than
// it is).
//
// The model (n ranks, B bytes of the caller's buffer, L latency per message hop, W link
// bandwidth) charges every collective steps * L + bytes_on_wire / W, where steps and
// bytes_on_wire are those of the algorithm a bandwidth-conscious implementation runs:
//   all-reduce  ring reduce-scatter + all-gather: 2(n-1) steps, 2(n-1)/n * B bytes
//   broadcast   binomial tree (as Gloo's):        ceil(log2 n) steps, ceil(log2 n) * B
//   all-gather  ring, B bytes in per rank:        (n-1) steps, (n-1) * B
//   barrier     dissemination (as Gloo's):        ceil(log2 n) steps, 0 bytes
// It charges the model, not the algorithm the inner communicator actually ran, so results
// stay comparable when the inner algorithm changes.
//
// When the modelled time starts: on a real network nothing reaches a rank before its sender has
// joined the collective, so no rank finishes before the last to arrive has joined plus the
// transfer. With `fromLastArrival`, after each collective the ranks exchange when each arrived,
// how long each spent in the real collective, its link's modelled duration and its host's boot
// (a sum all-reduce of 8 floats a rank on the inner communicator, so that it takes its fastest
// path; its bytes are not counted as the collectives'). Every rank is then held until the
// last arrival plus the slowest rank's modelled duration (a ring moves at its slowest link's
// pace):
//   - ranks of one host (a local cluster, network namespaces) share its monotonic clock: the
//     last arrival is the latest of their arrival times, exactly;
//   - across hosts the clocks are not comparable: the rank that spent least in the real
//     collective came last, and each rank's own time less that is how long it waited. This
//     also counts the real collective's jitter between ranks as waiting, so it errs late.
// Without it each rank counts from its own arrival with its own link: a rank that came early
// finishes early and starts its next step ahead, which hides up to one collective's duration
// of waiting for a late peer (a straggler's pause before a local_sgd average, say). Every rank
// of a group must make the same choice, and wrap its communicator even when its own link is
// not emulated (bandwidth and latency 0); the exchange needs host memory, so a communicator of
// device buffers (NCCL) keeps counting from its own arrival.
class EmulatedLinkCommunicator final : public Communicator {
 public:
  enum class Collective { kAllReduce, kBroadcast, kAllGather, kBarrier };

  // bandwidthMbps in 10^6 bit/s and latencyMs in milliseconds; 0 means unlimited / none.
  // An abort (may be null) also ends the emulated delay, with CommError kAborted. `clock`
  // names the monotonic clock this rank's times are read on (ranks that name the same one
  // compare arrivals directly; 0: not comparable with any); by default its host's boot.
  // `exchange` (may be null): a shared-memory segment of the group's ranks for the exchange
  // of arrivals, where every rank is on one machine (network namespaces or not), so that the
  // exchange does not cross the inner communicator's TCP (0.55-0.8 ms a collective on 4
  // namespace hosts of a busy 2-core machine).
  EmulatedLinkCommunicator(std::unique_ptr<Communicator> inner, double bandwidthMbps,
                           double latencyMs, const AbortSignal* abort = nullptr,
                           bool fromLastArrival = false,
                           std::optional<uint64_t> clock = std::nullopt,
                           std::unique_ptr<SharedMemoryAllReduce> exchange = nullptr);
  ~EmulatedLinkCommunicator() override;

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
  // time raised to the modelled duration a collective of that size is held to here (with
  // fromLastArrival, on the group's slowest link), so the bandwidths and the bucket size
  // derived from them are the emulated link's, and with fromLastArrival the same on every rank.
  AllReduceTuning tuneAllReduce(float* scratch, int64_t count) override;
  // The collectives' bytes; the exchange of arrivals (fromLastArrival) is the emulation's own.
  int64_t bytesSent() const override { return inner_->bytesSent() - exchangeSent_; }
  int64_t bytesReceived() const override { return inner_->bytesReceived() - exchangeReceived_; }

  // Modelled duration in seconds of one collective over `bytes` (see the class comment).
  static double modelledSeconds(Collective collective, int size, int64_t bytes,
                                double bandwidthMbps, double latencyMs);

  LinkTimeSplit timeSplit() const;
  Communicator& inner() { return *inner_; }

 private:
  using Clock = std::chrono::steady_clock;
  template <typename Body>
  void emulate(Collective collective, int64_t bytes, const Body& body);
  // A sum all-reduce of the emulation's own (on `exchange_` where there is one, else on the
  // inner communicator with its bytes kept out of the collectives').
  void exchangeSum(float* data, int64_t count);
  // fromLastArrival: the exchange after a collective this rank joined at `start` and left at
  // `finished`; returns the last rank's arrival on this rank's clock and raises `modelled` to
  // the slowest rank's.
  Clock::time_point lastArrival(Clock::time_point start, Clock::time_point finished,
                                double& modelled);

  std::unique_ptr<Communicator> inner_;
  double bandwidthMbps_;
  double latencyMs_;
  const AbortSignal* abort_;
  bool fromLastArrival_;
  uint64_t boot_ = 0;             // the clock its times are on (its host's boot); 0: not known
  std::vector<float> exchanged_;  // every rank's arrival record (emulate)
  std::unique_ptr<SharedMemoryAllReduce> exchange_;  // its path, when not the inner one
  AbortSignal::Registration exchangeAbort_;          // ends a pending exchange on an abort
  PunctualSleep sleep_;  // emulate's (collectives on one communicator never run at once)
  // What the exchanges added to the inner communicator's bytes (read by a metrics thread).
  std::atomic<int64_t> exchangeSent_{0};
  std::atomic<int64_t> exchangeReceived_{0};
  // Written by the calling thread, readable from a metrics thread.
  std::atomic<int64_t> collectives_{0};
  std::atomic<int64_t> realNs_{0};
  std::atomic<int64_t> waitedNs_{0};
  std::atomic<int64_t> modelledNs_{0};
};

}  // namespace dtlab::core
