#pragma once
// The all-reduce of ranks that share one host, through a shared-memory segment instead of TCP
// loopback. On loopback every byte crosses the kernel twice per hop (a copy into a socket
// buffer, one out) and each process waits on its peers' system calls; here every rank copies
// its slice of the buffer into the segment once, sums its part of every peer's slice there
// and copies the finished sums out, so a byte costs a few memory passes and no system call.
// NCCL does the same between GPUs of one node (its SHM transport); Gloo, whose algorithms the
// rest of the communicator runs, has no such path.
//
// "One host" is decided, not assumed: every rank publishes its boot id with its network and
// PID namespaces, and the segment is used only when they all agree (processes in separate
// network namespaces stand for separate hosts here, as in the multi-host tests) and every
// rank could map the segment rank 0 created (a container with its own /dev/shm fails that
// check and the group stays on TCP).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gloo::rendezvous {
class Store;
}

namespace dtlab::core {

class SharedMemoryAllReduce {
 public:
  // Collective over `store` (the group's keys, already prefixed): returns the group's segment,
  // or null with the reason in `whyNot` when the ranks are not all on one host or the segment
  // could not be shared; every rank returns the same answer. Store waits end by `deadline`.
  // `opTimeout` bounds how long one all-reduce waits for a peer.
  // With `acrossNetworkNamespaces`, ranks of one machine in separate network namespaces share
  // a segment too (for bookkeeping that is not the group's data path: the link emulation's
  // exchange of arrivals, core/comm/emulated_link_communicator.h).
  static std::unique_ptr<SharedMemoryAllReduce> create(
      gloo::rendezvous::Store& store, int rank, int size,
      std::chrono::steady_clock::time_point deadline, std::chrono::milliseconds opTimeout,
      std::string* whyNot, bool acrossNetworkNamespaces = false);
  ~SharedMemoryAllReduce();
  SharedMemoryAllReduce(const SharedMemoryAllReduce&) = delete;
  SharedMemoryAllReduce& operator=(const SharedMemoryAllReduce&) = delete;

  // In place: data[i] = sum over ranks of data[i], the same bits on every rank (every element
  // is summed once, in rank order, by one rank). Throws CommError: kAborted after abort(),
  // kPeerClosed when a peer failed, aborted, left or exited, kTimeout after opTimeout.
  void allReduceSum(float* data, int64_t count);

  // From any thread: this rank's pending and later all-reduces end with kAborted, and its
  // peers' with kPeerClosed (the group is marked failed in the segment and the waiters woken).
  void abort(const std::string& reason);
  // After another collective of this rank failed: the peers' pending all-reduces end now.
  void markFailed();

  // The key ranks compare: boot id, network (unless left out) and PID namespaces of this
  // process.
  static std::string hostKey(bool networkNamespace = true);

 private:
  struct Segment;
  SharedMemoryAllReduce(int rank, int size, std::chrono::milliseconds opTimeout);
  void waitForGeneration(uint32_t seen);
  void barrier();
  void throwIfFailed();

  int rank_ = 0;
  int size_ = 1;
  std::chrono::milliseconds opTimeout_;
  Segment* segment_ = nullptr;
  size_t mappedBytes_ = 0;
  uint64_t rounds_ = 0;  // rounds run so far: their parity picks the half of the slots
  int spins_ = 0;        // busy-wait iterations before sleeping on the futex
  std::vector<const float*> sources_;  // by rank: the slots a round sums (no per-call allocation)
  std::atomic<bool> aborted_{false};
};

}  // namespace dtlab::core
