#include "remote/node/parameter_stream.h"

#include <openssl/rand.h>
#include <poll.h>

#include <algorithm>
#include <cstring>

#include "core/common/log.h"
#include "remote/common/auth.h"
#include "remote/node/parameter_table.h"

namespace dtlab::remote {

namespace {

constexpr uint32_t kMaxJobBytes = 4096;
constexpr uint64_t kMaxMessageBytes = 64 * 1024;
// A hello must come this soon after connecting; a push's gradient this soon after its header.
constexpr std::chrono::seconds kHandshakeTime{10};
constexpr std::chrono::seconds kPayloadTime{60};

using namespace stream_wire;

SteadyTime after(std::chrono::seconds s) {
  return std::chrono::steady_clock::now() + s;
}

iovec part(const void* data, std::size_t bytes) {
  return {const_cast<void*>(data), bytes};
}

std::size_t blockBytes(const core::PsBlock& block) {
  return static_cast<std::size_t>(block.size()) * sizeof(float);
}

// The server's side of one connection after the hello: answers requests until the worker
// closes, or refuses one (then returns its reason).
std::string serveRequests(const StreamSocket& socket, ParameterTable& table,
                          const std::string& jobId,
                          const std::shared_ptr<core::ParameterHost>& host) {
  std::vector<float> buffer;
  for (;;) {
    Request request;
    socket.receiveAll(&request, sizeof(request), SteadyTime::max());  // idle between steps
    if (table.find(jobId) != host) return "job_id: this node no longer serves job '" + jobId + "'";
    core::ParameterBlock* block = host->block(request.block);
    if (block == nullptr)
      return "block: " + std::to_string(request.block) + " is not served by this node";
    const core::PsBlock& range = block->block();
    const std::size_t expected = blockBytes(range);
    const auto op = static_cast<Op>(request.op);
    if (op != Op::kPull && op != Op::kPush)
      return "op: " + std::to_string(request.op) + " is neither a pull (1) nor a push (2)";
    const uint64_t due = op == Op::kPush ? expected : 0;
    if (request.bytes != due)
      return std::string(op == Op::kPush ? "gradient" : "pull") + ": block [" +
             std::to_string(range.begin) + ", " + std::to_string(range.end) + ") takes " +
             std::to_string(due) + " bytes, got " + std::to_string(request.bytes);
    if (op == Op::kPush && request.basedOn < 0)
      return "based_on: must be >= 0, got " + std::to_string(request.basedOn);
    buffer.resize(static_cast<std::size_t>(range.size()));
    Reply reply;
    try {
      if (op == Op::kPull) {
        reply.version = block->pull(buffer.data());
        reply.bytes = expected;
      } else {
        socket.receiveAll(buffer.data(), expected, after(kPayloadTime));
        reply.version = block->push(buffer.data(), range.size(), request.basedOn);
      }
    } catch (const SocketError&) {
      throw;
    } catch (const std::exception& e) {
      return (op == Op::kPush ? "based_on: " : "") + std::string(e.what());
    }
    iovec parts[] = {part(&reply, sizeof(reply)), part(buffer.data(), reply.bytes)};
    socket.sendAll(parts, reply.bytes > 0 ? 2 : 1, after(kPayloadTime));
  }
}

// Sends a refusal: the reply header, then the reason.
template <typename Header>
void refuse(const StreamSocket& socket, Header header, const std::string& why) {
  const std::string message = why.substr(0, kMaxMessageBytes);
  header.status = 1;
  if constexpr (std::is_same_v<Header, Reply>)
    header.bytes = message.size();
  else
    header.messageBytes = static_cast<uint32_t>(message.size());
  iovec parts[] = {part(&header, sizeof(header)), part(message.data(), message.size())};
  socket.sendAll(parts, 2, after(kHandshakeTime));
}

}  // namespace

ParameterStreamServer::ParameterStreamServer(ParameterTable& table, const std::string& host)
    : table_(table), listener_(StreamSocket::listen(host, 0)), port_(listener_.localPort()) {
  acceptor_ = std::thread([this] { acceptLoop(); });
}

ParameterStreamServer::~ParameterStreamServer() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    for (Connection& c : connections_) c.socket.shutdown();
  }
  listener_.shutdown();
  acceptor_.join();
  for (Connection& c : connections_) c.thread.join();
}

std::string ParameterStreamServer::ticket(const std::string& jobId) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = tickets_.begin(); it != tickets_.end();)
    it = table_.find(it->first) ? std::next(it) : tickets_.erase(it);
  std::string& ticket = tickets_[jobId];
  if (ticket.empty()) {
    ticket.resize(kTicketBytes);
    if (RAND_bytes(reinterpret_cast<unsigned char*>(ticket.data()), kTicketBytes) != 1)
      throw std::runtime_error("no random bytes for a stream ticket");
  }
  return ticket;
}

std::size_t ParameterStreamServer::openConnections() {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<std::size_t>(std::count_if(connections_.begin(), connections_.end(),
                                                [](const Connection& c) { return !c.finished; }));
}

std::string ParameterStreamServer::admitted(const std::string& jobId, const std::string& ticket) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = tickets_.find(jobId);
  return it != tickets_.end() && constantTimeEquals(it->second, ticket) ? jobId : "";
}

void ParameterStreamServer::acceptLoop() {
  for (;;) {
    StreamSocket socket = listener_.accept();
    std::lock_guard<std::mutex> lock(mutex_);
    // Finished connections' threads are joined here, so they never pile up.
    for (auto it = connections_.begin(); it != connections_.end();) {
      if (!it->finished) {
        ++it;
        continue;
      }
      it->thread.join();
      it = connections_.erase(it);
    }
    if (!socket.valid() || stopping_) return;
    Connection& c = connections_.emplace_back();
    c.socket = std::move(socket);
    c.thread = std::thread([this, &c] { serve(c); });
  }
}

void ParameterStreamServer::serve(Connection& connection) {
  const StreamSocket& socket = connection.socket;
  try {
    Hello hello;
    socket.receiveAll(&hello, sizeof(hello), after(kHandshakeTime));
    std::string why;
    if (hello.magic != kMagic) {
      why = "not a DTLab parameter stream";
    } else if (hello.version != kVersion) {
      why = "stream protocol version " + std::to_string(hello.version) + ", this node speaks " +
            std::to_string(kVersion);
    } else if (hello.jobBytes > kMaxJobBytes || hello.ticketBytes != kTicketBytes) {
      why = "a hello with a job id of " + std::to_string(hello.jobBytes) +
            " bytes and a ticket of " + std::to_string(hello.ticketBytes);
    }
    std::string jobId, ticket;
    if (why.empty()) {
      jobId.resize(hello.jobBytes);
      ticket.resize(hello.ticketBytes);
      socket.receiveAll(jobId.data(), jobId.size(), after(kHandshakeTime));
      socket.receiveAll(ticket.data(), ticket.size(), after(kHandshakeTime));
      if (admitted(jobId, ticket).empty())
        why = "ticket: not one this node issued for job '" + jobId + "' (ask OpenStream)";
    }
    const std::shared_ptr<core::ParameterHost> host = why.empty() ? table_.find(jobId) : nullptr;
    if (why.empty() && !host)
      why = "job_id: this node serves no parameter shard of job '" + jobId + "'";
    if (!why.empty()) {
      refuse(socket, HelloReply{}, why);
    } else {
      HelloReply ok;
      socket.sendAll(&ok, sizeof(ok), after(kHandshakeTime));
      why = serveRequests(socket, table_, jobId, host);
      refuse(socket, Reply{}, why);
    }
  } catch (const SocketError&) {
    // The worker closed, or this server is stopping.
  } catch (const std::exception& e) {
    logAt(LogLevel::kWarn, "parameter stream: a connection ended: ", e.what());
  }
  std::lock_guard<std::mutex> lock(mutex_);
  connection.finished = true;
  connection.socket.shutdown();
}

ParameterStream::ParameterStream(const std::string& host, int port, const std::string& jobId,
                                 const std::string& ticket, SteadyTime deadline)
    : socket_(StreamSocket::connect(host, port, deadline)) {
  Hello hello;
  hello.jobBytes = static_cast<uint32_t>(jobId.size());
  hello.ticketBytes = static_cast<uint32_t>(ticket.size());
  iovec parts[] = {part(&hello, sizeof(hello)), part(jobId.data(), jobId.size()),
                   part(ticket.data(), ticket.size())};
  socket_.sendAll(parts, 3, deadline);
  HelloReply reply;
  socket_.receiveAll(&reply, sizeof(reply), deadline);
  if (reply.status != 0) {
    std::string message(std::min<uint64_t>(reply.messageBytes, kMaxMessageBytes), '\0');
    socket_.receiveAll(message.data(), message.size(), deadline);
    throw SocketError(SocketError::Kind::kRefused, message);
  }
}

namespace {

// One share's progress through a pull or a push: the requests (and gradients) still to send,
// the replies still to come.
struct Progress {
  const StreamShare* share = nullptr;
  std::vector<Request> requests;
  std::vector<iovec> out;
  iovec* next = nullptr;
  int left = 0;
  std::size_t replied = 0;  // replies complete
  Reply reply;
  std::size_t headGot = 0;
  char* payload = nullptr;  // where the current reply's bytes go
  std::size_t payloadGot = 0;
  std::string message;  // a refusal's reason
};

// Drives every share's sends and receives with poll(2) until all replies are in. `landing`
// gives where a successful reply's payload goes (after checking its size); `done` runs as
// each reply completes.
void exchange(std::vector<Progress>& shares, SteadyTime deadline,
              const std::function<char*(int block, const Reply&)>& landing,
              const std::function<void(int block, const Reply&)>& done) {
  std::vector<pollfd> fds(shares.size());
  for (;;) {
    std::size_t active = 0;
    for (std::size_t s = 0; s < shares.size(); ++s) {
      Progress& p = shares[s];
      const bool replying = p.replied < p.share->blocks.size();
      fds[s] = {replying ? p.share->stream->socket().fd() : -1,
                static_cast<short>((p.left > 0 ? POLLOUT : 0) | POLLIN), 0};
      active += replying ? 1 : 0;
    }
    if (active == 0) return;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      for (std::size_t s = 0; s < shares.size(); ++s)
        if (fds[s].fd >= 0)
          throw StreamCallError(s, SocketError::Kind::kTimeout, "no answer before the deadline");
    if (::poll(fds.data(), fds.size(), static_cast<int>(left.count()) + 1) < 0 && errno != EINTR)
      throw StreamCallError(0, SocketError::Kind::kClosed, std::strerror(errno));
    for (std::size_t s = 0; s < shares.size(); ++s) {
      if (fds[s].fd < 0 || fds[s].revents == 0) continue;
      Progress& p = shares[s];
      const StreamSocket& socket = p.share->stream->socket();
      try {
        if (p.left > 0) socket.sendSome(p.next, p.left);
        for (;;) {  // everything that has come
          if (p.replied == p.share->blocks.size()) break;
          const int block = p.share->blocks[p.replied];
          std::size_t got = 0;
          if (p.headGot < sizeof(Reply)) {
            got = socket.receiveSome(reinterpret_cast<char*>(&p.reply) + p.headGot,
                                     sizeof(Reply) - p.headGot);
            p.headGot += got;
            if (p.headGot == sizeof(Reply)) {
              if (p.reply.status != 0) {
                p.message.assign(std::min<uint64_t>(p.reply.bytes, kMaxMessageBytes), '\0');
                p.payload = p.message.data();
              } else {
                p.payload = landing(block, p.reply);
              }
              p.payloadGot = 0;
            }
          } else {
            const std::size_t due =
                p.reply.status != 0 ? p.message.size() : static_cast<std::size_t>(p.reply.bytes);
            got = due > p.payloadGot
                      ? socket.receiveSome(p.payload + p.payloadGot, due - p.payloadGot)
                      : 0;
            p.payloadGot += got;
            if (p.payloadGot == due) {
              if (p.reply.status != 0)
                throw StreamCallError(s, SocketError::Kind::kRefused, p.message);
              done(block, p.reply);
              ++p.replied;
              p.headGot = 0;
              continue;
            }
          }
          if (got == 0) break;
        }
      } catch (const StreamCallError&) {
        throw;
      } catch (const SocketError& e) {
        throw StreamCallError(s, e.kind(), e.what());
      }
    }
  }
}

// Each share's requests for its blocks, with `payload(block)` after each one's header where
// it returns bytes.
std::vector<Progress> prepare(std::span<const StreamShare> shares, Op op,
                              const std::vector<core::PsBlock>& layout, const float* gradient,
                              const std::vector<int64_t>* basedOn) {
  std::vector<Progress> progress(shares.size());
  for (std::size_t s = 0; s < shares.size(); ++s) {
    Progress& p = progress[s];
    p.share = &shares[s];
    for (int b : shares[s].blocks) {
      Request r;
      r.op = static_cast<uint32_t>(op);
      r.block = b;
      if (op == Op::kPush) {
        r.basedOn = basedOn->at(static_cast<std::size_t>(b));
        r.bytes = blockBytes(layout.at(static_cast<std::size_t>(b)));
      }
      p.requests.push_back(r);
    }
    for (std::size_t i = 0; i < p.requests.size(); ++i) {
      p.out.push_back(part(&p.requests[i], sizeof(Request)));
      if (op == Op::kPush)
        p.out.push_back(part(gradient + layout[static_cast<std::size_t>(p.requests[i].block)].begin,
                             p.requests[i].bytes));
    }
    p.next = p.out.data();
    p.left = static_cast<int>(p.out.size());
  }
  return progress;
}

}  // namespace

void pullOverStreams(std::span<const StreamShare> shares, const std::vector<core::PsBlock>& layout,
                     float* landing, SteadyTime deadline,
                     const std::function<void(int block, int64_t version)>& arrived) {
  std::vector<Progress> progress = prepare(shares, Op::kPull, layout, nullptr, nullptr);
  exchange(
      progress, deadline,
      [&](int block, const Reply& reply) -> char* {
        const core::PsBlock& range = layout[static_cast<std::size_t>(block)];
        if (reply.bytes != blockBytes(range))
          throw SocketError(SocketError::Kind::kRefused,
                            "block " + std::to_string(block) + " came with " +
                                std::to_string(reply.bytes) + " bytes where " +
                                std::to_string(blockBytes(range)) + " were due");
        return reinterpret_cast<char*>(landing + range.begin);
      },
      [&](int block, const Reply& reply) { arrived(block, reply.version); });
}

void pushOverStreams(std::span<const StreamShare> shares, const std::vector<core::PsBlock>& layout,
                     const float* gradient, const std::vector<int64_t>& basedOn,
                     SteadyTime deadline,
                     const std::function<void(int block, int64_t appliedTo)>& applied) {
  std::vector<Progress> progress = prepare(shares, Op::kPush, layout, gradient, &basedOn);
  exchange(
      progress, deadline,
      [&](int block, const Reply& reply) -> char* {
        if (reply.bytes != 0)
          throw SocketError(SocketError::Kind::kRefused,
                            "a push to block " + std::to_string(block) + " was answered with " +
                                std::to_string(reply.bytes) + " bytes");
        return nullptr;
      },
      [&](int block, const Reply& reply) { applied(block, reply.version); });
}

}  // namespace dtlab::remote
