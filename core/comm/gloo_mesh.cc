#include "core/comm/gloo_mesh.h"

#include <gloo/barrier.h>
#include <gloo/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/buffer.h>
#include <gloo/transport/context.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/context.h>
#include <gloo/transport/tcp/device.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <cstring>
#include <sstream>
#include <thread>
#include <vector>

#include "core/common/check.h"

namespace dtlab::core {
namespace {

// Gloo's TCP context can fail all its pairs from outside (each pair then wakes every buffer
// waiting on it with the error and closes its socket, so the peers fail too), but the method
// is protected in the Gloo that Debian ships. A using-declaration in a derived class yields
// a pointer to the member, which may be applied to any tcp::Context; nothing is instantiated.
struct TcpContextAccess : gloo::transport::tcp::Context {
  using gloo::transport::tcp::Context::signalException;
};
constexpr auto kFailAllPairs = &TcpContextAccess::signalException;

// "host:port" of a TCP address (Gloo's own str() prints the port unconverted).
std::string describeAddress(const std::vector<char>& bytes) {
  const gloo::transport::tcp::Address address(bytes);
  const sockaddr_storage& storage = address.getSockaddr();
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (storage.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&storage);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
    return detail::concat(host, ":", port);
  }
  if (storage.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&storage);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    port = ntohs(in6->sin6_port);
  }
  return detail::concat("[", host, "]:", port);
}

// The connect key of a rank: for every peer p, [int32 p][uint32 n][n address bytes] of the
// pair that waits for p.
void appendAddress(std::vector<char>& out, int peer, const std::vector<char>& address) {
  const auto p = static_cast<int32_t>(peer);
  const auto n = static_cast<uint32_t>(address.size());
  out.insert(out.end(), reinterpret_cast<const char*>(&p), reinterpret_cast<const char*>(&p) + 4);
  out.insert(out.end(), reinterpret_cast<const char*>(&n), reinterpret_cast<const char*>(&n) + 4);
  out.insert(out.end(), address.begin(), address.end());
}

std::vector<char> findAddress(const std::vector<char>& all, int peer, int owner) {
  std::size_t at = 0;
  while (at + 8 <= all.size()) {
    int32_t p = 0;
    uint32_t n = 0;
    std::memcpy(&p, all.data() + at, 4);
    std::memcpy(&n, all.data() + at + 4, 4);
    at += 8;
    if (at + n > all.size()) break;
    if (p == peer)
      return {all.begin() + static_cast<std::ptrdiff_t>(at),
              all.begin() + static_cast<std::ptrdiff_t>(at + n)};
    at += n;
  }
  throw CommError(CommFailure::kPeerClosed,
                  detail::concat("rank ", owner, " published no address for rank ", peer,
                                 " (a different DTLab version?)"));
}

// Socket send buffer every pair gets from warmUpSocketBuffers: at least the largest message
// the own all-reduce sends (a pipeline segment, or a two-rank exchange of up to 1 MiB).
constexpr size_t kSocketBufferBytes = size_t{1} << 20;

}  // namespace

int reservedSlot(int kind, int from, int to) {
  constexpr int kReservedSlotBase = 0x40000000;
  DTLAB_ENFORCE(kind >= 0 && kind < 16, "reserved slot kind ", kind, " out of range");
  return kReservedSlotBase + 2 * kind + (from < to ? 0 : 1);
}

void warmUpSocketBuffers(const std::shared_ptr<gloo::Context>& context,
                         std::chrono::milliseconds timeout) {
  const int rank = context->rank;
  const int size = context->size;
  std::vector<char> outgoing(kSocketBufferBytes);
  std::vector<char> incoming(kSocketBufferBytes * static_cast<size_t>(size));
  std::vector<std::unique_ptr<gloo::transport::Buffer>> sends, receives;
  for (int p = 0; p < size; ++p) {
    if (p == rank) continue;
    auto& pair = context->getPair(p);
    receives.push_back(pair->createRecvBuffer(
        reservedSlot(kWarmUpSlotKind, p, rank),
        incoming.data() + kSocketBufferBytes * static_cast<size_t>(p), kSocketBufferBytes));
    sends.push_back(pair->createSendBuffer(reservedSlot(kWarmUpSlotKind, rank, p), outgoing.data(),
                                           kSocketBufferBytes));
  }
  // Every rank registers before anyone sends into it.
  gloo::BarrierOptions opts(context);
  opts.setTimeout(timeout);
  gloo::barrier(opts);
  for (auto& send : sends) send->send();
  for (auto& receive : receives) receive->waitRecv();
  for (auto& send : sends) send->waitSend();
}

std::string formatSeconds(std::chrono::milliseconds ms) {
  std::ostringstream out;
  if (ms.count() % 1000 == 0) {
    out << ms.count() / 1000 << " s";
  } else {
    out << static_cast<double>(ms.count()) / 1000.0 << " s";
  }
  return out.str();
}

CommFailure classifyGlooFailure(std::string_view message) {
  std::string lower(message);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("timed out") != std::string::npos || lower.find("timeout") != std::string::npos
             ? CommFailure::kTimeout
             : CommFailure::kPeerClosed;
}

void joinRendezvous(gloo::rendezvous::Store& store, int rank, int size,
                    const std::string& keyPrefix, std::chrono::milliseconds connectTimeout,
                    std::chrono::steady_clock::time_point deadline) {
  // A join key per rank first lets a timeout say which ranks are missing (waiting for
  // address keys would only name a key).
  try {
    store.set(detail::concat("join/", rank), std::vector<char>{'1'});
  } catch (const std::exception& e) {
    throw Error(detail::concat("rendezvous of rank ", rank, " of ", size, " (key prefix '",
                               keyPrefix, "') could not write to the store: ", e.what(),
                               " (is the prefix already used by another group?)"));
  }
  std::vector<int> missing;
  std::string storeError;
  for (int r = 0; r < size; ++r) {
    if (r == rank) continue;
    // Once one rank is missing, only probe the rest so the error can list them all.
    const auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    // Gloo's stores read a zero timeout as "wait forever".
    const auto wait = missing.empty() ? std::max(remaining, std::chrono::milliseconds(1))
                                      : std::chrono::milliseconds(1);
    try {
      store.wait({detail::concat("join/", r)}, wait);
    } catch (const std::exception& e) {
      if (missing.empty() && std::chrono::steady_clock::now() < deadline) storeError = e.what();
      missing.push_back(r);
    }
  }
  if (missing.empty()) return;
  std::ostringstream out;
  out << "rendezvous timed out after " << formatSeconds(connectTimeout) << " waiting for rank "
      << missing.front() << " (rank " << rank << " of " << size << ", key prefix '" << keyPrefix
      << "'";
  if (missing.size() > 1) {
    out << ", missing ranks:";
    for (int r : missing) out << ' ' << r;
  }
  out << ")";
  if (!storeError.empty()) out << ": store error: " << storeError;
  throw CommError(CommFailure::kTimeout, out.str());
}

std::string GlooMesh::abortReason() const {
  std::lock_guard lock(mutex_);
  return reason_;
}

void GlooMesh::fail(const std::string& reason) {
  std::lock_guard lock(mutex_);
  if (transport_ == nullptr) return;
  // Only the TCP transport is built here. (Pair::close would only close the socket and
  // leave this rank's own waiters asleep until their timeout.)
  (static_cast<gloo::transport::tcp::Context*>(transport_.get())->*kFailAllPairs)(reason);
}

void GlooMesh::abort(const std::string& reason) {
  {
    std::lock_guard lock(mutex_);
    if (aborted_.load()) return;
    reason_ = reason;
    aborted_.store(true);
  }
  fail(detail::concat("aborted: ", reason));
}

// Every rank creates one pair per peer (each listening on its own port of
// the device's address), publishes their addresses under "addr/<rank>", then connects
// them in rank order (as Gloo's connectFullMesh does: the side with the larger address dials,
// the other accepts on its I/O thread, so walking the peers in the same order cannot
// deadlock). The pairs are reachable by abort() from the moment they exist, and a
// watchdog fails them all at the deadline, so a peer whose address cannot be reached costs
// at most connectTimeout, not Gloo's five pair timeouts.
std::shared_ptr<gloo::transport::Context> GlooMesh::connect(
    gloo::rendezvous::Store& store, const std::shared_ptr<gloo::transport::Device>& device,
    int rank, int size, std::chrono::milliseconds opTimeout,
    std::chrono::milliseconds connectTimeout, std::chrono::steady_clock::time_point deadline,
    const std::string& boundTo) {
  auto created = device->createContext(rank, size);
  created->setTimeout(opTimeout);
  std::vector<char> addresses;
  for (int p = 0; p < size; ++p) {
    if (p == rank) continue;
    appendAddress(addresses, p, created->createPair(p)->address().bytes());
  }
  {
    std::lock_guard lock(mutex_);
    transport_ = created;
  }
  if (aborted()) {
    fail("aborted: " + abortReason());
    throw CommError(CommFailure::kAborted, "connecting aborted (" + abortReason() + ")");
  }
  store.set(detail::concat("addr/", rank), addresses);

  std::mutex watchdogMutex;
  std::condition_variable watchdogWake;
  bool connected = false;
  std::thread watchdog([&] {
    std::unique_lock lock(watchdogMutex);
    if (watchdogWake.wait_until(lock, deadline, [&] { return connected; })) return;
    {
      std::lock_guard pairsLock(mutex_);
      connectTimedOut_ = true;
    }
    fail(detail::concat("connect timeout after ", formatSeconds(connectTimeout)));
  });
  auto stopWatchdog = [&] {
    {
      std::lock_guard lock(watchdogMutex);
      connected = true;
    }
    watchdogWake.notify_all();
    watchdog.join();
  };
  int peer = -1;
  std::string peerAddress = "(address not yet known)";
  try {
    for (peer = 0; peer < size; ++peer) {
      if (peer == rank) continue;
      peerAddress = "(address not yet known)";
      const auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      const std::string key = detail::concat("addr/", peer);
      store.wait({key}, std::max(remaining, std::chrono::milliseconds(1)));
      const std::vector<char> bytes = findAddress(store.get(key), rank, peer);
      peerAddress = describeAddress(bytes);
      created->getPair(peer)->connect(bytes);
    }
  } catch (const std::exception& e) {
    stopWatchdog();
    bool timedOut = false;
    {
      std::lock_guard lock(mutex_);
      timedOut = connectTimedOut_;
    }
    const CommFailure kind = aborted()  ? CommFailure::kAborted
                             : timedOut ? CommFailure::kTimeout
                                        : classifyGlooFailure(e.what());
    fail("connecting failed");
    std::string what = e.what();
    if (kind == CommFailure::kAborted) what = "aborted (" + abortReason() + ")";
    if (kind == CommFailure::kTimeout && timedOut)
      what = "no connection within " + formatSeconds(connectTimeout);
    throw CommError(kind,
                    detail::concat("rank ", rank, " of ", size, " could not connect to rank ", peer,
                                   " at ", peerAddress, " (bound to ", boundTo, "): ", what));
  }
  stopWatchdog();
  return created;
}

}  // namespace dtlab::core
