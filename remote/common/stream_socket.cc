#include "remote/common/stream_socket.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

namespace dtlab::remote {

namespace {

std::string errnoText(const char* call) {
  return std::string(call) + ": " + std::strerror(errno);
}

void setOptions(int fd) {
  const int on = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

// Milliseconds for poll(2) until `deadline` (-1: none), at least 0.
int pollTimeout(SteadyTime deadline) {
  if (deadline == SteadyTime::max()) return -1;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count() + 1, 0, INT_MAX));
}

struct AddressList {
  addrinfo* head = nullptr;
  AddressList(const std::string& host, int port, bool passive) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    const std::string service = std::to_string(port);
    const char* node = host.empty() ? nullptr : host.c_str();
    const int rc = ::getaddrinfo(node, service.c_str(), &hints, &head);
    if (rc != 0)
      throw SocketError(SocketError::Kind::kRefused,
                        "cannot resolve '" + host + "': " + ::gai_strerror(rc));
  }
  ~AddressList() {
    if (head != nullptr) ::freeaddrinfo(head);
  }
  AddressList(const AddressList&) = delete;
  AddressList& operator=(const AddressList&) = delete;
};

}  // namespace

StreamSocket& StreamSocket::operator=(StreamSocket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

StreamSocket::~StreamSocket() {
  if (fd_ >= 0) ::close(fd_);
}

StreamSocket StreamSocket::listen(const std::string& host, int port) {
  const AddressList addresses(host == "0.0.0.0" ? "" : host, port, true);
  std::string why = "no address";
  for (const addrinfo* a = addresses.head; a != nullptr; a = a->ai_next) {
    StreamSocket s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!s.valid()) continue;
    const int on = 1;
    ::setsockopt(s.fd_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    if (::bind(s.fd_, a->ai_addr, a->ai_addrlen) == 0 && ::listen(s.fd_, 64) == 0) {
      ::fcntl(s.fd_, F_SETFL, ::fcntl(s.fd_, F_GETFL) | O_NONBLOCK);
      return s;
    }
    why = errnoText("bind");
  }
  throw SocketError(SocketError::Kind::kRefused,
                    "cannot listen on " + host + ":" + std::to_string(port) + ": " + why);
}

StreamSocket StreamSocket::connect(const std::string& host, int port, SteadyTime deadline) {
  const AddressList addresses(host, port, false);
  std::string why = "no address";
  for (const addrinfo* a = addresses.head; a != nullptr; a = a->ai_next) {
    StreamSocket s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!s.valid()) continue;
    setOptions(s.fd_);
    if (::connect(s.fd_, a->ai_addr, a->ai_addrlen) == 0) return s;
    if (errno != EINPROGRESS) {
      why = errnoText("connect");
      continue;
    }
    s.await(POLLOUT, deadline);
    int error = 0;
    socklen_t length = sizeof(error);
    ::getsockopt(s.fd_, SOL_SOCKET, SO_ERROR, &error, &length);
    if (error == 0) return s;
    why = std::string("connect: ") + std::strerror(error);
  }
  throw SocketError(SocketError::Kind::kRefused,
                    "cannot connect to " + host + ":" + std::to_string(port) + ": " + why);
}

StreamSocket StreamSocket::accept() const {
  for (;;) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, -1) < 0 && errno != EINTR) return {};
    if ((p.revents & (POLLHUP | POLLERR | POLLNVAL)) != 0) return {};
    const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      setOptions(fd);
      return StreamSocket(fd);
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
      return {};  // shut down (EINVAL) or out of descriptors
  }
}

int StreamSocket::localPort() const {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) return 0;
  if (address.ss_family == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port);
  return ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
}

void StreamSocket::shutdown() const {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

void StreamSocket::await(short events, SteadyTime deadline) const {
  for (;;) {
    pollfd p{fd_, events, 0};
    const int rc = ::poll(&p, 1, pollTimeout(deadline));
    if (rc > 0) return;  // ready, or an error the next call reports
    if (rc < 0 && errno != EINTR) throw SocketError(SocketError::Kind::kClosed, errnoText("poll"));
    if (rc == 0 && std::chrono::steady_clock::now() >= deadline)
      throw SocketError(SocketError::Kind::kTimeout, "no progress before the deadline");
  }
}

void advanceParts(iovec*& parts, int& count, std::size_t bytes) {
  while (count > 0 && bytes >= parts->iov_len) {
    bytes -= parts->iov_len;
    ++parts;
    --count;
  }
  if (count > 0) {
    parts->iov_base = static_cast<char*>(parts->iov_base) + bytes;
    parts->iov_len -= bytes;
  }
}

void StreamSocket::sendSome(iovec*& parts, int& count) const {
  msghdr message{};
  message.msg_iov = parts;
  message.msg_iovlen = static_cast<std::size_t>(std::min(count, IOV_MAX));
  const ssize_t sent = ::sendmsg(fd_, &message, MSG_NOSIGNAL);
  if (sent < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
    throw SocketError(SocketError::Kind::kClosed, errnoText("send"));
  }
  advanceParts(parts, count, static_cast<std::size_t>(sent));
}

void StreamSocket::sendAll(iovec* parts, int count, SteadyTime deadline) const {
  for (;;) {
    sendSome(parts, count);
    if (count == 0) return;
    await(POLLOUT, deadline);
  }
}

void StreamSocket::sendAll(const void* data, std::size_t bytes, SteadyTime deadline) const {
  iovec part{const_cast<void*>(data), bytes};
  sendAll(&part, 1, deadline);
}

std::size_t StreamSocket::receiveSome(void* data, std::size_t bytes) const {
  const ssize_t got = ::recv(fd_, data, bytes, 0);
  if (got > 0) return static_cast<std::size_t>(got);
  if (got == 0 && bytes > 0)
    throw SocketError(SocketError::Kind::kClosed, "the peer closed the connection");
  if (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
    throw SocketError(SocketError::Kind::kClosed, errnoText("recv"));
  return 0;
}

void StreamSocket::receiveAll(void* data, std::size_t bytes, SteadyTime deadline) const {
  auto* at = static_cast<char*>(data);
  while (bytes > 0) {
    const std::size_t got = receiveSome(at, bytes);
    at += got;
    bytes -= got;
    if (bytes > 0 && got == 0) await(POLLIN, deadline);
  }
}

}  // namespace dtlab::remote
