#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "core/comm/abort_signal.h"
#include "core/comm/communicator.h"

namespace gloo::rendezvous {
class Store;
}

// Collectives between GPUs over NCCL. The class is in the CUDA plugin (libdtlab_cuda.so); programs
// make one with makeNcclCommunicator (cuda_plugin.h).

namespace dtlab::core {

struct NcclOptions {
  int device = 0;  // this rank's GPU (cuda:N); one rank per GPU
  // The address this rank's peers reach it at (as GlooOptions::interfaceAddress). NCCL picks
  // its own network interface, once per process: the first group pins it to the interface
  // holding this address (NCCL_SOCKET_IFNAME), unless the environment names one already.
  // Empty, or an address no interface holds: NCCL's own choice.
  std::string interfaceAddress;
  // The stream the buffers are written on (cudaStream_t, e.g. CudaBackend::stream()); every
  // collective first waits for the work queued on it so far. Null: the legacy default stream.
  void* computeStream = nullptr;
  // As GlooOptions: keys under "<keyPrefix>/", how long building the group and one collective
  // may take, and the signal that ends either at once.
  std::string keyPrefix = "dtlab";
  std::chrono::milliseconds connectTimeout{30000};
  std::chrono::milliseconds opTimeout{120000};
  const AbortSignal* abort = nullptr;
};

// Communicator over NCCL: the ncclUniqueId travels through the rendezvous store (rank 0
// writes it, the others wait for it), the group is built non-blocking so that a missing peer
// times out and an abort ends it, and every collective runs on a communication stream of its
// own. Buffers are device memory of options.device (host buffers work too: they are staged
// through a device buffer). Each call returns when the result is in the buffer; while it
// waits it watches the abort signal, NCCL's asynchronous error and opTimeout, and ends the
// group with ncclCommAbort on any of them (CommError kAborted, kPeerClosed, kTimeout), so
// peers blocked on this rank fail too rather than hang. After a failure the group is
// unusable. The constructor is collective, as GlooCommunicator's is.
class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(gloo::rendezvous::Store& store, int rank, int size,
                   const NcclOptions& options = {});
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override;
  int size() const override;
  bool deviceMemory() const override { return true; }
  // Call before the first collective (the training loop does, once its backend exists).
  void setComputeStream(void* stream) override;
  void allReduceSum(float* data, int64_t count) override;
  // ncclAvg: the division happens on the device.
  void allReduceAverage(float* data, int64_t count) override;
  // One CUDA event per slot, recorded on the compute stream by markComputeFence.
  void prepareFences(int fenceCount) override;
  void markComputeFence(int slot) override;
  void allReduceAfterFence(float* data, int64_t count, bool average, int slot) override;
  void broadcast(float* data, int64_t count, int root) override;
  void allGather(const float* in, int64_t count, float* out) override;
  void barrier() override;
  // NCCL does not report bytes: these count the payload of its ring algorithms per rank
  // (all-reduce 2(n-1)/n of the buffer each way, all-gather (n-1) blocks, broadcast one
  // buffer), the figures its own bus-bandwidth accounting uses.
  int64_t bytesSent() const override;
  int64_t bytesReceived() const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dtlab::core
