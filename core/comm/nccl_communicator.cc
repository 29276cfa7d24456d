#include "core/comm/nccl_communicator.h"

#include <cuda_runtime.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "core/backend/cuda/cuda_check.h"
#include "core/comm/gloo_mesh.h"
#include "core/comm/net_interface.h"
#include "core/common/check.h"

namespace dtlab::core {
namespace {

using Clock = std::chrono::steady_clock;
using detail::concat;

void checkNccl(ncclResult_t status, const char* call, const char* file, int line) {
  if (status == ncclSuccess || status == ncclInProgress) return;
  throw Error(concat(call, " failed: ", ncclGetErrorString(status), " (", ncclGetLastError(nullptr),
                     ") at ", file, ":", line));
}
#define DTLAB_NCCL_CHECK(call) checkNccl((call), #call, __FILE__, __LINE__)

bool isDeviceMemory(const void* p) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

}  // namespace

struct NcclCommunicator::Impl {
  Impl(int r, int s, const NcclOptions& o)
      : rank(r),
        size(s),
        device(o.device),
        compute(static_cast<cudaStream_t>(o.computeStream)),
        opTimeout(o.opTimeout),
        abort(o.abort) {}

  ~Impl() {
    registration.reset();
    cudaSetDevice(device);
    if (nccl != nullptr) {
      if (failed || !finalize()) {
        ncclCommAbort(nccl);
      } else {
        ncclCommDestroy(nccl);
      }
    }
    if (comm != nullptr) cudaStreamSynchronize(comm);
    cudaFree(staging);
    cudaFree(barrierScratch);
    if (computed != nullptr) cudaEventDestroy(computed);
    if (done != nullptr) cudaEventDestroy(done);
    for (cudaEvent_t fence : fences) cudaEventDestroy(fence);
    if (comm != nullptr) cudaStreamDestroy(comm);
  }

  // Flushes the group's operations (at most 10 s): whether it ended cleanly.
  bool finalize() {
    const ncclResult_t status = ncclCommFinalize(nccl);
    if (status != ncclSuccess && status != ncclInProgress) return false;
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(10);
    for (;;) {
      ncclResult_t state = ncclSuccess;
      if (ncclCommGetAsyncError(nccl, &state) != ncclSuccess) return false;
      if (state == ncclSuccess) return true;
      if (state != ncclInProgress || Clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

  std::string who() const { return concat("rank ", rank, " of ", size, ", cuda:", device); }

  // Ends the group (peers waiting on this rank fail too) and throws.
  [[noreturn]] void fail(CommFailure kind, const std::string& message) {
    if (!failed) {
      failed = true;
      if (nccl != nullptr) ncclCommAbort(nccl);
      nccl = nullptr;
    }
    throw CommError(kind, message);
  }

  // Waits until NCCL has taken the last call (no longer ncclInProgress) and, when `event` is
  // not null, until the event has completed; fails on an abort, an asynchronous NCCL error
  // (a peer that vanished or failed) and at `deadline`.
  void await(const std::string& what, cudaEvent_t event, Clock::time_point deadline) {
    for (int spins = 0;; ++spins) {
      ncclResult_t state = ncclSuccess;
      const ncclResult_t queried = ncclCommGetAsyncError(nccl, &state);
      if (queried != ncclSuccess) state = queried;
      if (state != ncclSuccess && state != ncclInProgress)
        fail(CommFailure::kPeerClosed,
             concat(what, " failed (", who(), "): NCCL says ", ncclGetErrorString(state), ": ",
                    ncclGetLastError(nccl)));
      if (state == ncclSuccess) {
        if (event == nullptr) return;
        const cudaError_t status = cudaEventQuery(event);
        if (status == cudaSuccess) return;
        if (status != cudaErrorNotReady)
          fail(CommFailure::kPeerClosed,
               concat(what, " failed (", who(), "): ", cudaGetErrorName(status), " (",
                      cudaGetErrorString(status), ")"));
      }
      if (abortRequested.load())
        fail(CommFailure::kAborted,
             concat(what, " aborted (", who(), "): ", abort != nullptr ? abort->reason() : ""));
      if (Clock::now() >= deadline)
        fail(CommFailure::kTimeout,
             concat(what, " timed out (", who(), ") after ",
                    formatSeconds(std::chrono::duration_cast<std::chrono::milliseconds>(opTimeout)),
                    ": a peer did not take part"));
      if (spins < 64) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
  }

  // One collective on the communication stream, after the compute stream's queued work (or,
  // given a fence, after the work the fence marked); returns once its result is in the buffers.
  template <typename Launch>
  void run(const std::string& what, Launch launch, cudaEvent_t fence = nullptr) {
    if (failed) throw CommError(CommFailure::kPeerClosed, what + ": the NCCL group failed earlier");
    if (abortRequested.load())
      fail(CommFailure::kAborted, concat(what, " aborted (", who(), "): ", abort->reason()));
    const Clock::time_point deadline = Clock::now() + opTimeout;
    DTLAB_CUDA_CHECK(cudaSetDevice(device));
    if (fence == nullptr) {
      DTLAB_CUDA_CHECK(cudaEventRecord(computed, compute));
      fence = computed;
    }
    DTLAB_CUDA_CHECK(cudaStreamWaitEvent(comm, fence, 0));
    const ncclResult_t status = launch();
    if (status != ncclSuccess && status != ncclInProgress)
      fail(CommFailure::kPeerClosed,
           concat(what, " failed (", who(), "): ", ncclGetErrorString(status), ": ",
                  ncclGetLastError(nccl)));
    await(what, nullptr, deadline);  // enqueued
    DTLAB_CUDA_CHECK(cudaEventRecord(done, comm));
    await(what, done, deadline);  // completed
  }

  // A device buffer of at least `count` floats for host buffers' collectives.
  float* stage(int64_t count) {
    if (count > stagingCount) {
      DTLAB_CUDA_CHECK(cudaStreamSynchronize(comm));
      cudaFree(staging);
      staging = nullptr;
      stagingCount = 0;
      DTLAB_CUDA_CHECK(cudaMalloc(&staging, static_cast<std::size_t>(count) * sizeof(float)));
      stagingCount = count;
    }
    return staging;
  }
  // Unified addressing tells host from device memory.
  void copy(void* dst, const void* src, int64_t count) {
    DTLAB_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(count) * sizeof(float),
                                     cudaMemcpyDefault, comm));
  }

  // An in-place collective on `count` floats of `data`: launch(buffer) with `data` itself, or
  // for a host buffer a device copy of it, copied back afterwards.
  template <typename Launch>
  void inPlace(const std::string& what, float* data, int64_t count, cudaEvent_t fence,
               Launch launch) {
    const bool host = !isDeviceMemory(data);
    float* buffer = host ? stage(count) : data;
    if (host) copy(buffer, data, count);
    run(
        what, [&] { return launch(buffer); }, fence);
    if (host) {
      copy(data, buffer, count);
      DTLAB_CUDA_CHECK(cudaStreamSynchronize(comm));
    }
  }

  // All-reduce of `count` floats (sum or average), after `fence` when not null.
  void allReduce(float* data, int64_t count, bool average, cudaEvent_t fence) {
    if (count <= 0) return;
    inPlace(concat("NCCL all-reduce (", average ? "average" : "sum", ") of ", count, " floats"),
            data, count, fence, [&](float* buffer) {
              return ncclAllReduce(buffer, buffer, static_cast<std::size_t>(count), ncclFloat,
                                   average ? ncclAvg : ncclSum, nccl, comm);
            });
    const int64_t bytes = 2 * (size - 1) * count * static_cast<int64_t>(sizeof(float)) / size;
    sent += bytes;
    received += bytes;
  }

  int rank;
  int size;
  int device;
  cudaStream_t compute;
  std::chrono::milliseconds opTimeout;
  const AbortSignal* abort;
  cudaStream_t comm = nullptr;
  cudaEvent_t computed = nullptr;  // the compute stream's work before a collective
  cudaEvent_t done = nullptr;      // a collective's completion on the communication stream
  ncclComm_t nccl = nullptr;
  bool failed = false;
  std::atomic<bool> abortRequested{false};
  AbortSignal::Registration registration;
  float* staging = nullptr;
  int64_t stagingCount = 0;
  float* barrierScratch = nullptr;
  std::vector<cudaEvent_t> fences;  // markComputeFence's, one per slot
  std::atomic<int64_t> sent{0};
  std::atomic<int64_t> received{0};
};

namespace {

// NCCL reads NCCL_SOCKET_IFNAME when a process first uses it, so the first group's address
// decides for all: later groups of the process keep that interface.
void pinSocketInterface(const std::string& address) {
  static std::mutex mutex;
  static bool decided = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (decided) return;
  decided = true;
  if (std::getenv("NCCL_SOCKET_IFNAME") != nullptr) return;  // the user's choice stands
  const std::string name = interfaceHolding(address);
  if (!name.empty()) setenv("NCCL_SOCKET_IFNAME", ("=" + name).c_str(), 0);  // "=": exact name
}

}  // namespace

NcclCommunicator::NcclCommunicator(gloo::rendezvous::Store& store, int rank, int size,
                                   const NcclOptions& options)
    : impl_(std::make_unique<Impl>(rank, size, options)) {
  DTLAB_ENFORCE(size >= 1 && rank >= 0 && rank < size, "NCCL group: rank ", rank, " of ", size);
  Impl& s = *impl_;
  const Clock::time_point deadline = Clock::now() + options.connectTimeout;
  DTLAB_CUDA_CHECK(cudaSetDevice(options.device));
  pinSocketInterface(options.interfaceAddress);
  if (options.abort != nullptr)
    s.registration = options.abort->onAbort([&s](const std::string&) { s.abortRequested = true; });

  // The group's id: made by rank 0, read by the others from the rendezvous.
  gloo::rendezvous::PrefixStore prefixed(options.keyPrefix, store);
  joinRendezvous(prefixed, rank, size, options.keyPrefix, options.connectTimeout, deadline);
  ncclUniqueId id{};
  const std::string key = "nccl_unique_id";
  if (rank == 0) {
    DTLAB_NCCL_CHECK(ncclGetUniqueId(&id));
    const char* bytes = reinterpret_cast<const char*>(&id);
    prefixed.set(key, std::vector<char>(bytes, bytes + sizeof id));
  } else {
    const auto remaining =
        std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()),
                 std::chrono::milliseconds(1));
    try {
      prefixed.wait({key}, remaining);
    } catch (const std::exception& e) {
      throw CommError(CommFailure::kTimeout,
                      concat("NCCL group (", s.who(), ", key prefix '", options.keyPrefix,
                             "'): rank 0's ncclUniqueId did not arrive within ",
                             formatSeconds(options.connectTimeout), ": ", e.what()));
    }
    const std::vector<char> bytes = prefixed.get(key);
    if (bytes.size() != sizeof id)
      throw Error(concat("NCCL group (", s.who(), "): the ncclUniqueId in the store has ",
                         bytes.size(), " bytes, expected ", sizeof id));
    std::memcpy(&id, bytes.data(), sizeof id);
  }

  DTLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&s.comm, cudaStreamNonBlocking));
  DTLAB_CUDA_CHECK(cudaEventCreateWithFlags(&s.computed, cudaEventDisableTiming));
  DTLAB_CUDA_CHECK(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming));
  DTLAB_CUDA_CHECK(cudaMalloc(&s.barrierScratch, sizeof(float)));
  // Non-blocking: the calls return at once and the group's progress is polled, so that a
  // missing peer times out and an abort ends the wait (ncclCommAbort).
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  const ncclResult_t status = ncclCommInitRankConfig(&s.nccl, size, id, rank, &config);
  if (status != ncclSuccess && status != ncclInProgress) {
    if (s.nccl != nullptr) ncclCommAbort(s.nccl);
    s.nccl = nullptr;
    throw CommError(CommFailure::kPeerClosed, concat("ncclCommInitRankConfig (", s.who(),
                                                     ") failed: ", ncclGetErrorString(status), ": ",
                                                     ncclGetLastError(nullptr)));
  }
  try {
    s.await("building the NCCL group", nullptr, deadline);
  } catch (const CommError& e) {
    if (e.failure() != CommFailure::kTimeout) throw;
    throw CommError(
        CommFailure::kTimeout,
        concat("building the NCCL group (", s.who(), ") timed out after ",
               formatSeconds(options.connectTimeout), ": not every rank joined with this id"));
  }
}

NcclCommunicator::~NcclCommunicator() = default;

void NcclCommunicator::setComputeStream(void* stream) {
  impl_->compute = static_cast<cudaStream_t>(stream);
}

int NcclCommunicator::rank() const {
  return impl_->rank;
}

int NcclCommunicator::size() const {
  return impl_->size;
}

void NcclCommunicator::allReduceSum(float* data, int64_t count) {
  impl_->allReduce(data, count, false, nullptr);
}

void NcclCommunicator::allReduceAverage(float* data, int64_t count) {
  impl_->allReduce(data, count, true, nullptr);
}

void NcclCommunicator::prepareFences(int fenceCount) {
  Impl& s = *impl_;
  DTLAB_CUDA_CHECK(cudaSetDevice(s.device));
  while (static_cast<int>(s.fences.size()) < fenceCount) {
    cudaEvent_t fence = nullptr;
    DTLAB_CUDA_CHECK(cudaEventCreateWithFlags(&fence, cudaEventDisableTiming));
    s.fences.push_back(fence);
  }
}

void NcclCommunicator::markComputeFence(int slot) {
  Impl& s = *impl_;
  DTLAB_ENFORCE(slot >= 0 && slot < static_cast<int>(s.fences.size()), "fence slot ", slot, " of ",
                s.fences.size(), " prepared");
  DTLAB_CUDA_CHECK(cudaEventRecord(s.fences[static_cast<std::size_t>(slot)], s.compute));
}

void NcclCommunicator::allReduceAfterFence(float* data, int64_t count, bool average, int slot) {
  Impl& s = *impl_;
  DTLAB_ENFORCE(slot >= 0 && slot < static_cast<int>(s.fences.size()), "fence slot ", slot, " of ",
                s.fences.size(), " prepared");
  s.allReduce(data, count, average, s.fences[static_cast<std::size_t>(slot)]);
}

void NcclCommunicator::broadcast(float* data, int64_t count, int root) {
  Impl& s = *impl_;
  DTLAB_ENFORCE(root >= 0 && root < s.size, "broadcast root ", root, " of ", s.size);
  if (count <= 0) return;
  s.inPlace(concat("NCCL broadcast of ", count, " floats from rank ", root), data, count, nullptr,
            [&](float* buffer) {
              return ncclBroadcast(buffer, buffer, static_cast<std::size_t>(count), ncclFloat, root,
                                   s.nccl, s.comm);
            });
  const int64_t bytes = count * static_cast<int64_t>(sizeof(float));
  if (s.size > 1) (s.rank == root ? s.sent : s.received) += bytes;
}

void NcclCommunicator::allGather(const float* in, int64_t count, float* out) {
  if (count <= 0) return;
  Impl& s = *impl_;
  const int64_t total = count * s.size;
  const bool host = !isDeviceMemory(in) || !isDeviceMemory(out);
  // Staged: the gathered blocks first, this rank's input after them.
  float* gathered = host ? s.stage(total + count) : out;
  const float* send = host ? gathered + total : in;
  if (host) s.copy(gathered + total, in, count);
  s.run(concat("NCCL all-gather of ", count, " floats per rank"), [&] {
    return ncclAllGather(send, gathered, static_cast<std::size_t>(count), ncclFloat, s.nccl,
                         s.comm);
  });
  if (host) {
    s.copy(out, gathered, total);
    DTLAB_CUDA_CHECK(cudaStreamSynchronize(s.comm));
  }
  const int64_t bytes = (s.size - 1) * count * static_cast<int64_t>(sizeof(float));
  s.sent += bytes;
  s.received += bytes;
}

void NcclCommunicator::barrier() {
  Impl& s = *impl_;
  s.run("NCCL barrier", [&] {
    return ncclAllReduce(s.barrierScratch, s.barrierScratch, 1, ncclFloat, ncclSum, s.nccl, s.comm);
  });
}

int64_t NcclCommunicator::bytesSent() const {
  return impl_->sent.load();
}

int64_t NcclCommunicator::bytesReceived() const {
  return impl_->received.load();
}

}  // namespace dtlab::core
