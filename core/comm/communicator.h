#pragma once

#include <cstdint>
#include <string_view>

#include "core/comm/allreduce_tuning.h"
#include "core/comm/half_float.h"
#include "core/common/check.h"

namespace dtlab::core {

// Why a collective (or building a group) failed. Callers decide what to do by the kind, not
// by parsing messages: a timeout or a closed peer may name a lost node; an abort was asked
// for (cancel, a missed heartbeat) and is never the root cause of a run's failure.
enum class CommFailure {
  kTimeout,     // a peer did not answer in time (rendezvous, connect or a collective)
  kPeerClosed,  // a peer closed or reset its connection, or could not be reached
  kAborted,     // this rank's AbortSignal fired
};
std::string_view toString(CommFailure failure);

class CommError : public Error {
 public:
  CommError(CommFailure failure, const std::string& message) : Error(message), failure_(failure) {}
  CommFailure failure() const { return failure_; }

 private:
  CommFailure failure_;
};

// A group of `size()` ranks that run collectives together. Every rank must call the same
// collectives in the same order with the same counts (and the same root); a mismatch is a
// programming error that ends in a timeout, not in a diagnosis.
//
// Buffers are host memory (the CPU backend's float32 tensors), or device memory for a
// communicator whose deviceMemory() says so (NCCL; it takes host buffers too). Thread safety: one
// thread calls a communicator at a time; callers that use it from several threads (e.g. the
// gradient bucket thread and the training thread) serialise the calls themselves.
//
// Failures come back as CommError naming the collective, the count and the rank. After a
// failure the group is unusable (peers may have given up half way): rebuild it. A pending
// collective can be ended from another thread through the AbortSignal the implementation
// was built with (see abort_signal.h).
class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Whether the collectives work on a GPU's memory (NcclCommunicator), so that a GPU
  // backend's buffers can be passed as they are.
  virtual bool deviceMemory() const { return false; }
  // For a device-memory communicator: the stream the caller's buffers are written on
  // (cudaStream_t, Backend::stream()); every later collective first waits for the work queued
  // on it. The others ignore it.
  virtual void setComputeStream(void* /*stream*/) {}

  // In place: data[i] = sum over ranks of data[i].
  virtual void allReduceSum(float* data, int64_t count) = 0;
  // In place: data[i] = sum over ranks of data[i], 16-bit floats of `format` (compressed
  // gradients), host memory. Each addition is taken in float32 and rounded back; every rank
  // ends with the same values. The default, which any group can run, all-gathers the halves and
  // sums them in rank order on every rank: it sends (n-1) times the buffer where a ring sends
  // 2(n-1)/n of it, so a group with a transport of its own overrides it (Gloo runs a ring).
  virtual void allReduceSum16(uint16_t* data, int64_t count, HalfFormat format);
  // Sum, then scale by 1/size() locally (no extra communication). A device-memory
  // communicator scales on the device.
  virtual void allReduceAverage(float* data, int64_t count);
  // Overlap on a GPU (gradient buckets): markComputeFence(slot) notes how far the compute
  // stream has got, from the thread that queued the slot's data, and allReduceAfterFence(...,
  // slot), from any thread, waits only for that rather than for everything queued by the time
  // it starts. prepareFences(n) makes slots 0..n-1, before any is used; a slot is marked once
  // per collective that uses it, and markComputeFence may run while another thread is in a
  // collective (the one exception to "one thread at a time"). Host-memory communicators have
  // nothing to wait for: the plain collective (the average when `average`).
  virtual void prepareFences(int /*fenceCount*/) {}
  virtual void markComputeFence(int /*slot*/) {}
  virtual void allReduceAfterFence(float* data, int64_t count, bool average, int /*slot*/) {
    average ? allReduceAverage(data, count) : allReduceSum(data, count);
  }
  // Measures the group's all-reduce at message sizes up to `count` floats, on `scratch` (the
  // caller's host memory, e.g. the gradient buffer before the first step: its contents are
  // overwritten), and from then on runs each size with the algorithm that was fastest there
  // (see allreduce_tuning.h); returns what it measured, for the run's "start" event and the
  // bucket size. Collective, like an all-reduce. The bytes it moves are not counted in
  // bytesSent() and bytesReceived(). A communicator with one algorithm (or one that tunes
  // itself, as NCCL does) measures nothing: empty.
  virtual AllReduceTuning tuneAllReduce(float* /*scratch*/, int64_t /*count*/) { return {}; }
  // In place: every rank ends with root's data.
  virtual void broadcast(float* data, int64_t count, int root) = 0;
  // out[r * count + i] = rank r's in[i]; out holds size() * count floats and must not
  // overlap in.
  virtual void allGather(const float* in, int64_t count, float* out) = 0;
  // Returns once every rank has entered it.
  virtual void barrier() = 0;

  // Payload bytes this rank has sent since creation (transport headers excluded), for the
  // comm metrics.
  virtual int64_t bytesSent() const = 0;
  // Payload bytes this rank has received, counted the same way.
  virtual int64_t bytesReceived() const = 0;
};

}  // namespace dtlab::core
