#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "core/train/parameter_server.h"
#include "remote/common/stream_socket.h"

namespace dtlab::remote {

class ParameterTable;

// The parameter server's stream: pulls and pushes of whole blocks over a plain TCP connection
// beside gRPC, the bytes moved by the kernel straight between the socket and the floats (a
// pull is copied once on the server, from the block under its lock into the reply; a push's
// gradient lands in a buffer and is applied from there), with no HTTP/2 framing, flow
// control windows or message assembly in between. gRPC stays the control plane: a worker asks
// the shard's ParameterServer service (token, TLS where on) to OpenStream, which answers the
// port and a ticket for the job; the connection presents that ticket before anything else.
// A node serving mutual TLS opens no stream (its pulls and pushes stay inside TLS).
//
// On the wire (stream_wire below), one connection per worker and shard: a hello (magic,
// version, job id, ticket) answered by a status; then requests {op, block, based_on, bytes} +
// a push's gradient, each answered in order by {status, version, bytes} + a pull's values,
// or, status != 0, the message saying what was wrong (after which the server closes).
// The stream's messages as they travel (native little-endian; every request answered in
// order). Public for the tests and the fuzz target that speak it.
namespace stream_wire {
inline constexpr uint32_t kMagic = 0x53505444;  // "DTPS"
inline constexpr uint32_t kVersion = 1;
inline constexpr std::size_t kTicketBytes = 16;

enum class Op : uint32_t { kPull = 1, kPush = 2 };

// Then jobBytes of job id and ticketBytes of ticket.
struct Hello {
  uint32_t magic = kMagic;
  uint32_t version = kVersion;
  uint32_t jobBytes = 0;
  uint32_t ticketBytes = 0;
};
struct HelloReply {
  int32_t status = 0;  // 0: admitted; else a message of messageBytes follows and the server closes
  uint32_t messageBytes = 0;
};
// Then, for a push, `bytes` of gradient.
struct Request {
  uint32_t op = 0;
  int32_t block = 0;
  int64_t basedOn = 0;
  uint64_t bytes = 0;  // the gradient that follows (push), 0 (pull)
};
// Then `bytes` of values (a pull) or of message (status != 0, after which the server closes).
struct Reply {
  int32_t status = 0;
  uint32_t reserved = 0;
  int64_t version = 0;  // pull: the values' version; push: the version it was applied to
  uint64_t bytes = 0;
};
}  // namespace stream_wire

class ParameterStreamServer {
 public:
  // Listens on `host` (the daemon's listen host) at a port the kernel picks.
  ParameterStreamServer(ParameterTable& table, const std::string& host);
  // Stops accepting, ends every connection and waits for their threads.
  ~ParameterStreamServer();
  ParameterStreamServer(const ParameterStreamServer&) = delete;
  ParameterStreamServer& operator=(const ParameterStreamServer&) = delete;

  int port() const { return port_; }
  // The ticket that admits a connection to `jobId`'s blocks (16 random bytes, the same for
  // every call while the job is served; tickets of jobs the table no longer holds are dropped).
  std::string ticket(const std::string& jobId);
  // Connections being served now (workers connected to this node's blocks).
  std::size_t openConnections();

 private:
  struct Connection {
    StreamSocket socket;
    std::thread thread;
    bool finished = false;  // under mutex_
  };
  void acceptLoop();
  void serve(Connection& connection);
  // The job `ticket` admits, or "".
  std::string admitted(const std::string& jobId, const std::string& ticket);

  ParameterTable& table_;
  StreamSocket listener_;
  int port_ = 0;
  std::mutex mutex_;
  std::map<std::string, std::string> tickets_;  // job -> ticket
  std::list<Connection> connections_;
  bool stopping_ = false;
  std::thread acceptor_;
};

// A worker's connection to one shard's stream (the hello done). Throws SocketError: kRefused
// with the server's reason when it turns the ticket down.
class ParameterStream {
 public:
  ParameterStream(const std::string& host, int port, const std::string& jobId,
                  const std::string& ticket, SteadyTime deadline);
  const StreamSocket& socket() const { return socket_; }

 private:
  StreamSocket socket_;
};

// The blocks (indices into the layout) one pull or push moves over one stream.
struct StreamShare {
  const ParameterStream* stream = nullptr;
  std::vector<int> blocks;
};

// A failure of one share of a pull or push: which share, and how (kRefused: the server's
// message, e.g. an unknown block).
class StreamCallError : public SocketError {
 public:
  StreamCallError(std::size_t share, Kind kind, const std::string& what)
      : SocketError(kind, what), share_(share) {}
  std::size_t share() const { return share_; }

 private:
  std::size_t share_;
};

// Pulls every share's blocks, all shares at once: each block's values land in `landing` at
// the block's offset, then `arrived(block, version)` runs while the others still come.
void pullOverStreams(std::span<const StreamShare> shares, const std::vector<core::PsBlock>& layout,
                     float* landing, SteadyTime deadline,
                     const std::function<void(int block, int64_t version)>& arrived);
// Pushes every share's blocks of `gradient` (based on basedOn[block]), all shares at once;
// `applied(block, appliedTo)` as each block's answer comes.
void pushOverStreams(std::span<const StreamShare> shares, const std::vector<core::PsBlock>& layout,
                     const float* gradient, const std::vector<int64_t>& basedOn,
                     SteadyTime deadline,
                     const std::function<void(int block, int64_t appliedTo)>& applied);

}  // namespace dtlab::remote
