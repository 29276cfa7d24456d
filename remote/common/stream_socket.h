#pragma once

#include <sys/uio.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace dtlab::remote {

// Plain TCP stream sockets for the data that gRPC moves too slowly (the parameter server's
// pulls and pushes, parameter_stream.h): IPv4 or IPv6, TCP_NODELAY, keepalive, blocking
// calls bounded by a deadline through poll(2). Failures throw SocketError.
using SteadyTime = std::chrono::steady_clock::time_point;

class SocketError : public std::runtime_error {
 public:
  enum class Kind { kClosed, kTimeout, kRefused };
  SocketError(Kind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

class StreamSocket {
 public:
  StreamSocket() = default;
  explicit StreamSocket(int fd) : fd_(fd) {}
  StreamSocket(StreamSocket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  StreamSocket& operator=(StreamSocket&& other) noexcept;
  StreamSocket(const StreamSocket&) = delete;
  StreamSocket& operator=(const StreamSocket&) = delete;
  ~StreamSocket();

  // A socket listening on host:port (port 0: one the kernel picks; "" or "0.0.0.0": every
  // IPv4 address, "::" every address).
  static StreamSocket listen(const std::string& host, int port);
  // Connected to host:port within the deadline, or SocketError (kRefused: nobody listens or
  // the host cannot be resolved; kTimeout).
  static StreamSocket connect(const std::string& host, int port, SteadyTime deadline);
  // The next connection (blocking); an invalid socket once shutdown() was called.
  StreamSocket accept() const;

  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  int localPort() const;
  // Ends every blocked or later call on this socket, from any thread (the descriptor stays
  // open until the destructor, so no other file can take its number meanwhile).
  void shutdown() const;

  // Sends all of `parts` (scatter-gather, several per system call) or throws: kClosed when the
  // peer is gone, kTimeout at the deadline.
  void sendAll(iovec* parts, int count, SteadyTime deadline) const;
  void sendAll(const void* data, std::size_t bytes, SteadyTime deadline) const;
  // Receives exactly `bytes` or throws (kClosed: the peer closed before they all came).
  void receiveAll(void* data, std::size_t bytes, SteadyTime deadline) const;
  // One recv(2) of at most `bytes` without blocking: how many came (0: none yet); throws
  // kClosed when the peer closed.
  std::size_t receiveSome(void* data, std::size_t bytes) const;
  // One sendmsg(2) of what it can of `parts` without blocking, advancing them past what went.
  void sendSome(iovec*& parts, int& count) const;

 private:
  // Waits until the socket is readable (POLLIN) or writable (POLLOUT), or throws kTimeout.
  void await(short events, SteadyTime deadline) const;

  int fd_ = -1;
};

// Advances `parts` (count of them) past `bytes` already sent.
void advanceParts(iovec*& parts, int& count, std::size_t bytes);

}  // namespace dtlab::remote
