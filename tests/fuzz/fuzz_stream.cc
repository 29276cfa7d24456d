// The parameter server's stream (remote/node/parameter_stream.h), a real ParameterStreamServer
// on loopback in this process, fed hostile bytes over a real connection. Input: byte 0, bit 0:
// the bytes follow a valid hello for the served job (so requests are reached), else they are
// the whole conversation; the rest is sent, then the connection is half-closed. Promised for
// every input: the server answers and closes (or just closes) within seconds, never hangs on
// a half-closed peer; every refusal it sends carries a message; the node never crashes, leaks
// or trips a sanitizer, afterwards still serves a valid pull, and lets go of every connection
// once its worker has closed it.
#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "remote/common/stream_socket.h"
#include "remote/node/parameter_service.h"
#include "remote/node/parameter_stream.h"
#include "tests/fuzz/fuzz_support.h"

namespace core = dtlab::core;
namespace remote = dtlab::remote;
namespace wire = dtlab::remote::stream_wire;
using dtlab::fuzz::finding;

namespace {

constexpr const char* kJob = "fuzz-stream";
constexpr int64_t kParams = 1000;  // one block

// Served once per process and never torn down (as fuzz_rpc's node).
struct Harness {
  remote::ParameterTable table;
  std::unique_ptr<remote::ParameterStreamServer> server;
  std::string ticket;
};

Harness& harness() {
  static Harness* h = [] {
    auto* made = new Harness;
    core::ExperimentSpec spec;
    auto host = std::make_shared<core::ParameterHost>(spec, core::psLayout(kParams, 1), 0, 1, 8,
                                                      1'000'000'000);
    const std::vector<float> zeros(static_cast<std::size_t>(kParams), 0.0f);
    host->block(0)->init(zeros.data(), kParams);
    made->table.install(kJob, host);
    made->server = std::make_unique<remote::ParameterStreamServer>(made->table, "127.0.0.1");
    made->ticket = made->server->ticket(kJob);
    return made;
  }();
  return *h;
}

std::string bytesOf(const void* data, std::size_t n) {
  return {static_cast<const char*>(data), n};
}

std::string validHello() {
  wire::Hello hello;
  hello.jobBytes = static_cast<uint32_t>(std::strlen(kJob));
  hello.ticketBytes = static_cast<uint32_t>(harness().ticket.size());
  return bytesOf(&hello, sizeof(hello)) + kJob + harness().ticket;
}

std::string request(wire::Op op, int32_t block, int64_t basedOn, uint64_t bytes) {
  wire::Request r;
  r.op = static_cast<uint32_t>(op);
  r.block = block;
  r.basedOn = basedOn;
  r.bytes = bytes;
  return bytesOf(&r, sizeof(r));
}

remote::SteadyTime in(std::chrono::seconds s) {
  return std::chrono::steady_clock::now() + s;
}

// Everything the server sends until it closes; a finding when it keeps the connection open.
std::string answerUntilClosed(const remote::StreamSocket& socket, std::string_view input) {
  std::string answer;
  char chunk[4096];
  const auto deadline = in(std::chrono::seconds(5));
  for (;;) {
    try {
      socket.receiveAll(chunk, 1, deadline);
      answer += chunk[0];
      const std::size_t more = socket.receiveSome(chunk, sizeof(chunk));
      answer.append(chunk, more);
    } catch (const remote::SocketError& e) {
      if (e.kind() == remote::SocketError::Kind::kTimeout)
        finding("the stream neither answered nor closed a half-closed connection", input);
      return answer;
    }
  }
}

void writeSeeds(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const uint64_t blockBytes = kParams * sizeof(float);
  const std::vector<std::string> seeds = {
      // a pull, a push with its gradient, then a pull again
      std::string(1, '\1') + request(wire::Op::kPull, 0, 0, 0),
      std::string(1, '\1') + request(wire::Op::kPush, 0, 0, blockBytes) +
          std::string(blockBytes, '\0') + request(wire::Op::kPull, 0, 0, 0),
      // a push whose gradient is cut short, a block that is not served, an unknown op
      std::string(1, '\1') + request(wire::Op::kPush, 0, 3, blockBytes) + std::string(100, '\0'),
      std::string(1, '\1') + request(wire::Op::kPull, 7, 0, 0),
      std::string(1, '\1') + request(static_cast<wire::Op>(9), 0, 0, 0),
      // not the protocol, and a hello whose ticket is wrong
      std::string(1, '\0') + "GET / HTTP/1.1\r\nHost: x\r\n\r\n",
      std::string(1, '\0') + validHello().substr(0, validHello().size() - 1) + "x",
  };
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "seed-%02zu.bin", i);
    std::ofstream(dir / name, std::ios::binary) << seeds[i];
  }
}

// A fresh, valid connection still pulls the block.
void requireStillServing(std::string_view input) {
  try {
    remote::ParameterStream stream("127.0.0.1", harness().server->port(), kJob, harness().ticket,
                                   in(std::chrono::seconds(5)));
    std::vector<float> landing(static_cast<std::size_t>(kParams));
    const remote::StreamShare share{&stream, {0}};
    remote::pullOverStreams({&share, 1}, core::psLayout(kParams, 1), landing.data(),
                            in(std::chrono::seconds(5)), [](int, int64_t) {});
  } catch (const std::exception& e) {
    finding(std::string("a valid pull failed after this input: ") + e.what(), input);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  return dtlab::fuzz::writeSeedsIfAsked(writeSeeds);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const bool hello = (data[0] & 1) != 0;
  const std::string sent = (hello ? validHello() : "") + std::string(input.substr(1));
  const remote::StreamSocket socket = remote::StreamSocket::connect(
      "127.0.0.1", harness().server->port(), in(std::chrono::seconds(5)));
  try {
    socket.sendAll(sent.data(), sent.size(), in(std::chrono::seconds(5)));
  } catch (const remote::SocketError&) {
    // The server refused early and closed: what it said is read below.
  }
  ::shutdown(socket.fd(), SHUT_WR);
  const std::string answer = answerUntilClosed(socket, input);

  // Walk the replies: each refusal (status != 0) must say why.
  std::size_t at = 0;
  if (hello && answer.size() >= sizeof(wire::HelloReply)) {
    wire::HelloReply reply;
    std::memcpy(&reply, answer.data(), sizeof(reply));
    if (reply.status != 0) finding("a valid hello was refused", input);
    at = sizeof(reply);
    while (answer.size() - at >= sizeof(wire::Reply)) {
      wire::Reply r;
      std::memcpy(&r, answer.data() + at, sizeof(r));
      at += sizeof(r);
      if (r.status != 0 && r.bytes == 0) finding("a request refused without a message", input);
      at += std::min<std::size_t>(answer.size() - at, r.bytes);
    }
  } else if (!hello && answer.size() >= sizeof(wire::HelloReply)) {
    wire::HelloReply reply;
    std::memcpy(&reply, answer.data(), sizeof(reply));
    if (reply.status != 0 && reply.messageBytes == 0)
      finding("a hello refused without a message", input);
  }
  requireStillServing(input);
  // Every connection of this input is closed on this side: the server must let go of each
  // (and of the exception that told it), before the next input and the leak check.
  const auto deadline = in(std::chrono::seconds(5));
  while (harness().server->openConnections() > 0) {
    if (std::chrono::steady_clock::now() > deadline)
      finding("the server still serves a connection its worker closed", input);
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return 0;
}
