// The parameter server's stream (remote/node/parameter_stream.h): pulls and pushes beside gRPC,
// served by a real ParameterStreamServer and ParameterService on loopback in this process, used
// by GrpcParameterClient as an async_ps worker uses it. It must move exactly what gRPC moves,
// fall back to gRPC where a shard has no stream, refuse what is wrong with a reason, and end
// a call on a shard that is gone at once.
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "core/comm/communicator.h"
#include "core/train/parameter_server.h"
#include "remote/common/protocol.h"
#include "remote/common/stream_socket.h"
#include "remote/node/parameter_client.h"
#include "remote/node/parameter_service.h"
#include "remote/node/parameter_stream.h"

// After the protocol headers: Qt's `slots` macro would otherwise rename DeviceInfo::slots().
#include <QtTest/QtTest>
#undef slots

namespace core = dtlab::core;
namespace remote = dtlab::remote;
using remote::SocketError;

namespace {

constexpr const char* kJob = "stream-job";
constexpr const char* kToken = "stream-token";
// Two shards, each of several blocks (core::kMaxBlockFloats at most).
constexpr int64_t kParams = 2'100'000;
constexpr int kShards = 2;

std::vector<float> ramp(int64_t n, float scale) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = scale * static_cast<float>(i % 991) - 1.0f;
  return v;
}

core::ExperimentSpec momentumSpec() {
  core::ExperimentSpec spec;
  spec.optimizer.kind = core::OptimizerKind::kSgd;
  spec.optimizer.momentum = 0.9f;
  return spec;
}

remote::SteadyTime in(std::chrono::milliseconds ms) {
  return std::chrono::steady_clock::now() + ms;
}

// One shard's daemon side: its blocks, the stream (unless withStream is false) and the
// ParameterServer service, on 127.0.0.1.
struct Shard {
  remote::ParameterTable table;
  std::unique_ptr<remote::ParameterStreamServer> stream;
  std::unique_ptr<remote::ParameterService> service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;

  Shard(int index, bool withStream) {
    table.install(kJob, std::make_shared<core::ParameterHost>(
                            momentumSpec(), core::psLayout(kParams, kShards), index, 2, 32, 100));
    if (withStream) stream = std::make_unique<remote::ParameterStreamServer>(table, "127.0.0.1");
    service = std::make_unique<remote::ParameterService>(table, kToken, stream.get());
    grpc::ServerBuilder builder;
    builder.SetMaxReceiveMessageSize(remote::kMaxRequestBytes);
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service.get());
    server = builder.BuildAndStart();
  }
  ~Shard() { stop(); }
  void stop() {
    if (server) server->Shutdown(std::chrono::system_clock::now());
    server.reset();
    stream.reset();
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port); }
};

remote::ParameterClientOptions optionsFor(const std::vector<std::unique_ptr<Shard>>& shards) {
  remote::ParameterClientOptions options;
  options.jobId = kJob;
  options.token = kToken;
  for (const auto& s : shards) options.addresses.push_back(s->address());
  options.names = {"first", "second"};
  return options;
}

// Pushes and pulls three steps through `client` and the same through a host in this process;
// every pulled value and version must agree bit for bit.
void trainAlongsideTheReference(remote::GrpcParameterClient& client) {
  const std::vector<core::PsBlock> layout = core::psLayout(kParams, kShards);
  core::ParameterHost local(momentumSpec(), layout, -1, 2, 32, 100);
  core::LocalParameterClient reference(local, layout, 0);
  const std::vector<float> initial = ramp(kParams, 0.001f);
  client.init(initial.data());
  reference.init(initial.data());
  std::vector<float> pulled(static_cast<std::size_t>(kParams), 0.0f), expected = pulled;
  std::vector<int64_t> versions, expectedVersions;
  client.pull(pulled.data(), versions);
  QVERIFY(pulled == initial);
  QCOMPARE(versions, std::vector<int64_t>(layout.size(), 0));

  const std::vector<float> gradient = ramp(kParams, -0.003f);
  core::WorkerReport report;
  for (int step = 0; step < 3; ++step) {
    report.clock = step + 1;
    const core::PushOutcome pushed = client.push(gradient.data(), versions, report);
    QCOMPARE(pushed.staleness, int64_t{0});
    QCOMPARE(pushed.board.totalPushes, int64_t{step + 1});
    reference.pull(expected.data(), expectedVersions);
    reference.push(gradient.data(), expectedVersions, report);
    const core::PullOutcome outcome = client.pull(pulled.data(), versions);
    const core::PullOutcome expectedOutcome = reference.pull(expected.data(), expectedVersions);
    QVERIFY(pulled == expected);
    QCOMPARE(versions, expectedVersions);
    QVERIFY(outcome.distanceSquared > 0.0);  // the pull measured the step it brought
    QCOMPARE(outcome.distanceSquared, expectedOutcome.distanceSquared);
  }
  QCOMPARE(client.bytesReceived(), 4 * kParams * int64_t{sizeof(float)});
  QCOMPARE(client.bytesSent(), 4 * kParams * int64_t{sizeof(float)});  // init and 3 pushes
}

}  // namespace

class TestParameterStream : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void pullsAndPushesOverStreamsMatchTheServerBitForBit() {
    std::vector<std::unique_ptr<Shard>> shards;
    for (int s = 0; s < kShards; ++s) shards.push_back(std::make_unique<Shard>(s, true));
    remote::GrpcParameterClient client(core::psLayout(kParams, kShards), optionsFor(shards));
    QCOMPARE(shards[0]->stream->openConnections(), std::size_t{0});
    trainAlongsideTheReference(client);
    // Both shards' blocks went over their streams: one connection each, kept open.
    QCOMPARE(shards[0]->stream->openConnections(), std::size_t{1});
    QCOMPARE(shards[1]->stream->openConnections(), std::size_t{1});
  }

  void aShardWithoutAStreamIsServedOverGrpc() {
    // The second shard has no stream (as a TLS daemon): its blocks go over gRPC, the first
    // shard's over its stream, in the same pulls and pushes.
    std::vector<std::unique_ptr<Shard>> shards;
    shards.push_back(std::make_unique<Shard>(0, true));
    shards.push_back(std::make_unique<Shard>(1, false));
    remote::GrpcParameterClient client(core::psLayout(kParams, kShards), optionsFor(shards));
    trainAlongsideTheReference(client);
    QCOMPARE(shards[0]->stream->openConnections(), std::size_t{1});

    // A client told to use gRPC alone opens no stream at all.
    std::vector<std::unique_ptr<Shard>> fresh;
    for (int s = 0; s < kShards; ++s) fresh.push_back(std::make_unique<Shard>(s, true));
    remote::ParameterClientOptions options = optionsFor(fresh);
    options.stream = false;
    remote::GrpcParameterClient grpcOnly(core::psLayout(kParams, kShards), options);
    trainAlongsideTheReference(grpcOnly);
    QCOMPARE(fresh[0]->stream->openConnections(), std::size_t{0});
  }

  void theStreamRefusesWhatIsWrongAndSaysWhat() {
    Shard shard(0, true);
    const std::vector<core::PsBlock> layout = core::psLayout(kParams, kShards);
    const int port = shard.stream->port();
    const std::string ticket = shard.stream->ticket(kJob);
    QCOMPARE(ticket.size(), std::size_t{16});
    QCOMPARE(shard.stream->ticket(kJob), ticket);  // one per job

    // A ticket the node did not issue, and a job it does not serve.
    auto refusal = [&](const std::string& job, const std::string& t) {
      try {
        remote::ParameterStream stream("127.0.0.1", port, job, t, in(std::chrono::seconds(5)));
      } catch (const SocketError& e) {
        return e.kind() == SocketError::Kind::kRefused ? std::string(e.what()) : "other";
      }
      return std::string("admitted");
    };
    std::string forged = ticket;
    forged[3] = static_cast<char>(forged[3] ^ 1);
    QVERIFY2(refusal(kJob, forged).find("ticket: not one this node issued for job 'stream-job'") !=
                 std::string::npos,
             refusal(kJob, forged).c_str());
    QVERIFY(refusal("other-job", ticket).find("ticket") != std::string::npos);

    // Bytes that are not the protocol at all: refused in words, then closed.
    {
      const remote::StreamSocket raw =
          remote::StreamSocket::connect("127.0.0.1", port, in(std::chrono::seconds(5)));
      const std::string garbage = "GET / HTTP/1.1\r\n";
      raw.sendAll(garbage.data(), garbage.size(), in(std::chrono::seconds(5)));
      std::string answer;
      char chunk[256];
      try {
        for (;;) {
          raw.receiveAll(chunk, 1, in(std::chrono::seconds(5)));
          answer += chunk[0];
        }
      } catch (const SocketError& e) {
        QVERIFY(e.kind() == SocketError::Kind::kClosed);
      }
      QVERIFY2(answer.find("not a DTLab parameter stream") != std::string::npos, answer.c_str());
    }

    // A block this shard does not serve: the call fails naming it, the rest of the shares are
    // not waited for.
    const std::vector<float> values = ramp(kParams, 0.5f);
    {
      remote::ParameterStream stream("127.0.0.1", port, kJob, ticket, in(std::chrono::seconds(5)));
      std::vector<float> landing(static_cast<std::size_t>(kParams));
      const int foreign = static_cast<int>(layout.size()) - 1;  // shard 1's last block
      QCOMPARE(layout[static_cast<std::size_t>(foreign)].shard, 1);
      const remote::StreamShare share{&stream, {foreign}};
      try {
        remote::pullOverStreams({&share, 1}, layout, landing.data(), in(std::chrono::seconds(5)),
                                [](int, int64_t) {});
        QFAIL("a foreign block was pulled");
      } catch (const remote::StreamCallError& e) {
        QCOMPARE(e.share(), std::size_t{0});
        QVERIFY(e.kind() == SocketError::Kind::kRefused);
        QVERIFY2(std::string(e.what()) ==
                     "block: " + std::to_string(foreign) + " is not served by this node",
                 e.what());
      }
    }
    // A gradient of the wrong size (a layout that does not match the server's).
    {
      remote::ParameterStream stream("127.0.0.1", port, kJob, ticket, in(std::chrono::seconds(5)));
      std::vector<core::PsBlock> wrong = layout;
      wrong[0].end -= 1;
      const remote::StreamShare share{&stream, {0}};
      try {
        remote::pushOverStreams({&share, 1}, wrong, values.data(),
                                std::vector<int64_t>(layout.size(), 0), in(std::chrono::seconds(5)),
                                [](int, int64_t) {});
        QFAIL("a short gradient was applied");
      } catch (const remote::StreamCallError& e) {
        QVERIFY(e.kind() == SocketError::Kind::kRefused);
        const std::string expected = "gradient: block [0, " + std::to_string(layout[0].end) +
                                     ") takes " + std::to_string(layout[0].size() * 4) +
                                     " bytes, got " + std::to_string(wrong[0].size() * 4);
        QVERIFY2(std::string(e.what()) == expected, e.what());
      }
    }
    // Before any init the block cannot be pulled: the server's reason comes back.
    {
      remote::ParameterStream stream("127.0.0.1", port, kJob, ticket, in(std::chrono::seconds(5)));
      std::vector<float> landing(static_cast<std::size_t>(kParams));
      const remote::StreamShare share{&stream, {0}};
      QVERIFY_THROWS_EXCEPTION(
          remote::StreamCallError,
          remote::pullOverStreams({&share, 1}, layout, landing.data(), in(std::chrono::seconds(5)),
                                  [](int, int64_t) {}));
    }
  }

  void aShardThatIsGoneEndsTheCallAtOnce() {
    std::vector<std::unique_ptr<Shard>> shards;
    for (int s = 0; s < kShards; ++s) shards.push_back(std::make_unique<Shard>(s, true));
    remote::ParameterClientOptions options = optionsFor(shards);
    options.callTimeout = std::chrono::milliseconds(60000);
    remote::GrpcParameterClient client(core::psLayout(kParams, kShards), options);
    const std::vector<float> initial = ramp(kParams, 0.001f);
    client.init(initial.data());
    std::vector<float> pulled(static_cast<std::size_t>(kParams));
    std::vector<int64_t> versions;
    client.pull(pulled.data(), versions);

    shards[1]->stop();  // its daemon gone: the stream's connection closes
    try {
      client.pull(pulled.data(), versions);
      QFAIL("a pull from a stopped shard succeeded");
    } catch (const core::CommError& e) {
      QVERIFY(e.failure() == core::CommFailure::kPeerClosed);  // not the 60 s deadline
      QVERIFY2(std::string(e.what()).find("shard 1 on node second") != std::string::npos, e.what());
    }
    // The next call asks the node for its stream again and finds it gone.
    try {
      core::WorkerReport report;
      client.push(initial.data(), versions, report);
      QFAIL("a push to a stopped shard succeeded");
    } catch (const core::CommError& e) {
      QVERIFY(e.failure() == core::CommFailure::kPeerClosed);
      QVERIFY2(std::string(e.what()).find("shard 1") != std::string::npos, e.what());
    }
  }

  void aSilentStreamTimesOutAndAShutdownEndsItAtOnce() {
    // A listener that admits the hello and then never answers.
    const remote::StreamSocket listener = remote::StreamSocket::listen("127.0.0.1", 0);
    remote::StreamSocket accepted;
    std::thread peer([&] {
      accepted = listener.accept();
      char hello[64];
      const std::size_t got = accepted.receiveSome(hello, sizeof(hello));
      Q_UNUSED(got);
      const char admitted[8] = {};
      accepted.sendAll(admitted, sizeof(admitted), in(std::chrono::seconds(5)));
    });
    remote::ParameterStream stream("127.0.0.1", listener.localPort(), "j", std::string(16, 'x'),
                                   in(std::chrono::seconds(5)));
    peer.join();
    const std::vector<core::PsBlock> layout = core::psLayout(1000, 1);
    std::vector<float> landing(1000);
    const remote::StreamShare share{&stream, {0}};
    try {
      remote::pullOverStreams({&share, 1}, layout, landing.data(),
                              in(std::chrono::milliseconds(200)), [](int, int64_t) {});
      QFAIL("a silent stream answered");
    } catch (const remote::StreamCallError& e) {
      QVERIFY(e.kind() == SocketError::Kind::kTimeout);
    }
    // An abort shuts the socket down from another thread: the waiting call ends as closed,
    // long before its deadline.
    std::thread aborter([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      stream.socket().shutdown();
    });
    try {
      remote::pullOverStreams({&share, 1}, layout, landing.data(), in(std::chrono::seconds(600)),
                              [](int, int64_t) {});
      QFAIL("a shut-down stream answered");
    } catch (const remote::StreamCallError& e) {
      QVERIFY(e.kind() == SocketError::Kind::kClosed);
    }
    aborter.join();
  }
};

QTEST_GUILESS_MAIN(TestParameterStream)
#include "test_parameter_stream.moc"
