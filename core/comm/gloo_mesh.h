#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "core/comm/communicator.h"

namespace gloo {
class Context;
}
namespace gloo::rendezvous {
class Store;
}
namespace gloo::transport {
class Context;
class Device;
}  // namespace gloo::transport

namespace dtlab::core {

// How GlooCommunicator builds its group, apart from the collectives: the rendezvous join, and
// the TCP pairs, made so that any thread can fail them at any time (an abort).

// "30 s", "0.3 s".
std::string formatSeconds(std::chrono::milliseconds ms);

// Gloo reports every transport failure as an exception with a message; its timeouts say so
// ("Timed out waiting ...", "Connect timeout"), everything else is a closed, reset or
// refused connection.
CommFailure classifyGlooFailure(std::string_view message);

// Every rank writes "join/<rank>" and waits for the others' until `deadline`, so that a
// timeout can say which ranks are missing (waiting for address keys would only name a key).
// Throws CommError kTimeout listing them, or dtlab::Error when the store refuses the write.
void joinRendezvous(gloo::rendezvous::Store& store, int rank, int size,
                    const std::string& keyPrefix, std::chrono::milliseconds connectTimeout,
                    std::chrono::steady_clock::time_point deadline);

// Slots of bound buffers that DTLab registers on a Gloo context next to Gloo's own. Gloo's
// classic algorithms count their slots up from 0 (Context::nextSlot) and its newer
// collectives use unbound buffers, which live in a separate table, so slots this high cannot
// collide with either. The slot also encodes the direction on the pair: Gloo's tcp::Buffer
// destructor unregisters by slot whatever buffer is registered there, so a send buffer
// destroyed on the slot we receive on would take our registered receive area with it.
// `kind` (0-15) names the use: the own all-reduce's kinds, and kWarmUpSlotKind.
int reservedSlot(int kind, int from, int to);
constexpr int kWarmUpSlotKind = 15;

// Gloo sizes a pair's socket send buffer to the largest bound message sent so far (and
// setting it turns the kernel's autotuning off). Left to the first messages, a buffer sized
// for a small message makes the next slightly larger one wait for a delayed ACK: measured,
// a 128 KiB all-reduce after smaller ones took 40 ms instead of 0.2 ms, and Gloo's
// unbound-buffer `gloo::allreduce` with 4 ranks on 2 cores ran at 0.002 GB/s. One large
// message each way on every pair, up front, sizes every buffer for whatever follows: any
// algorithm on those pairs, Gloo's or ours. Collective: every rank of `context` calls it.
void warmUpSocketBuffers(const std::shared_ptr<gloo::Context>& context,
                         std::chrono::milliseconds timeout);

// The pairs of one rank to all its peers. Gloo's connectFullMesh keeps them out of reach
// until it returns (so a connect could not be aborted) and waits up to five pair timeouts
// for each peer; this creates and connects them itself.
class GlooMesh {
 public:
  // Creates one pair per peer on `device` (each listening on its own port), publishes their
  // addresses under "addr/<rank>" of `store`, then connects them in rank order (as
  // connectFullMesh does: the side with the larger address dials, the other accepts on its
  // I/O thread, so walking the peers in the same order cannot deadlock). A watchdog fails
  // every pair at `deadline`. Throws CommError naming the peer and its address.
  std::shared_ptr<gloo::transport::Context> connect(
      gloo::rendezvous::Store& store, const std::shared_ptr<gloo::transport::Device>& device,
      int rank, int size, std::chrono::milliseconds opTimeout,
      std::chrono::milliseconds connectTimeout, std::chrono::steady_clock::time_point deadline,
      const std::string& boundTo);

  // Fails every pair with `reason` (a no-op before they exist): threads waiting on them wake
  // with an error, the sockets close, and so the peers' waits fail too. Any thread.
  void fail(const std::string& reason);
  // fail(), and remembers that the group was aborted (the first reason wins). Any thread.
  void abort(const std::string& reason);
  bool aborted() const { return aborted_.load(); }
  std::string abortReason() const;

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<gloo::transport::Context> transport_;  // guarded by mutex_
  std::atomic<bool> aborted_{false};
  std::string reason_;            // guarded by mutex_
  bool connectTimedOut_ = false;  // guarded by mutex_
};

}  // namespace dtlab::core
