// Daemon tests: real dtlab-node processes on loopback, driven through the gRPC protocol.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "core/comm/gloo_communicator.h"
#include "core/common/check.h"
#include "core/common/config.h"
#include "remote/common/auth.h"
#include "remote/common/client.h"
#include "remote/common/protocol.h"
#include "remote/proto/dtlab.grpc.pb.h"
#include "remote/rendezvous_store.h"

// After the protocol headers: Qt's `slots` macro would otherwise rename DeviceInfo::slots().
#include <QtCore/QProcess>
#include <QtTest/QtTest>
#undef slots

#include "tests/remote/node_process.h"
#include "tests/remote/node_rpc.h"

namespace proto = dtlab::remote::proto;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

using dtlab::test::kNodeBinary;
using dtlab::test::NodeProcess;
using namespace dtlab::test::rpc;

std::unique_ptr<proto::Rendezvous::Stub> rendezvousStub(const std::string& address) {
  return proto::Rendezvous::NewStub(dtlab::remote::makeNodeChannel(address));
}

// Runs until cancelled: a million steps.
std::string longSpec() {
  return tinySpec(1000000);
}

struct WatchOutcome {
  grpc::Status status;
  bool finished = false;
  proto::JobResult result;
  int64_t stepPoints = 0;
  int64_t evalPoints = 0;
  int64_t lastStep = -1;
  bool stepsIncreasing = true;
  int messages = 0;
  int maxPointsInOneMessage = 0;
};

// Reads the WatchJob stream to its end (bounded by `timeout`); stepsSeen counts step points
// as they arrive, for tests that act once the job is running.
WatchOutcome watchToEnd(proto::NodeService::Stub& stub, const std::string& jobId,
                        const std::string& token = {}, std::chrono::milliseconds timeout = 60s,
                        std::atomic<int64_t>* stepsSeen = nullptr, int slot = 0) {
  WatchOutcome outcome;
  grpc::ClientContext context;
  prepare(context, token, timeout);
  proto::WatchJobRequest request;
  request.set_protocol_version(dtlab::remote::kProtocolVersion);
  request.set_job_id(jobId);
  request.set_slot(slot);
  auto reader = stub.WatchJob(&context, request);
  proto::JobUpdate update;
  while (reader->Read(&update)) {
    ++outcome.messages;
    const int points = update.steps_size() + update.evals_size() + update.events_size() +
                       update.node_samples_size();
    outcome.maxPointsInOneMessage = std::max(outcome.maxPointsInOneMessage, points);
    for (const auto& step : update.steps()) {
      if (step.step() <= outcome.lastStep) outcome.stepsIncreasing = false;
      outcome.lastStep = step.step();
      ++outcome.stepPoints;
    }
    outcome.evalPoints += update.evals_size();
    if (stepsSeen != nullptr) stepsSeen->store(outcome.stepPoints);
    if (update.finished()) {
      outcome.finished = true;
      outcome.result = update.result();
    }
  }
  outcome.status = reader->Finish();
  return outcome;
}

proto::ReserveResponse reserve(proto::NodeService::Stub& stub, const std::string& id,
                               uint64_t ticket, proto::ReserveRequest::Action action,
                               grpc::Status* status, uint32_t leaseMs = 6000) {
  grpc::ClientContext context;
  prepare(context);
  proto::ReserveRequest request;
  request.set_protocol_version(dtlab::remote::kProtocolVersion);
  request.set_reservation_id(id);
  request.set_ticket(ticket);
  request.set_owner(id + "@lab");
  request.set_run_name("exp/" + id);
  request.set_lease_ms(leaseMs);
  request.set_action(action);
  proto::ReserveResponse response;
  *status = stub.Reserve(&context, request, &response);
  return response;
}

}  // namespace

class TestNode : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  // Who may start a job: the reservation that holds the node committed; a job without one
  // only while nobody holds or waits. The others wait in ticket order and are told for what.
  void reservationsDecideWhoStartsAJob() {
    NodeProcess node({"--name", "shared"});
    QVERIFY(node.ready());
    auto stub = nodeStub(node.address());
    grpc::Status status;
    reserve(*stub, "r1", 5, proto::ReserveRequest::WAIT, &status, 10);
    QCOMPARE(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    QVERIFY2(status.error_message().find("lease_ms: must be in [1000, 120000], got 10") == 0,
             status.error_message().c_str());
    reserve(*stub, "", 5, proto::ReserveRequest::WAIT, &status);
    QCOMPARE(status.error_message(), std::string("reservation_id: must not be empty"));

    QCOMPARE(reserve(*stub, "bob", 5, proto::ReserveRequest::WAIT, &status).state(),
             proto::ReserveResponse::HELD);
    proto::StartJobRequest mine = startRequest("bobs-job", tinySpec(20));
    mine.set_reservation_id("bob");
    const grpc::Status early = startJob(*stub, mine);
    QCOMPARE(early.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    QVERIFY2(early.error_message().find("shared is not reserved for this run (reservation bob)") !=
                 std::string::npos,
             early.error_message().c_str());
    const grpc::Status withoutOne = startJob(*stub, startRequest("tool-job", tinySpec(20)));
    QCOMPARE(withoutOne.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    QVERIFY2(withoutOne.error_message().find("shared is reserved for bob@lab's run 'exp/bob'") !=
                 std::string::npos,
             withoutOne.error_message().c_str());

    QCOMPARE(reserve(*stub, "bob", 5, proto::ReserveRequest::COMMIT, &status).state(),
             proto::ReserveResponse::COMMITTED);
    const proto::ReserveResponse waiting =
        reserve(*stub, "carol", 9, proto::ReserveRequest::COMMIT, &status);
    QVERIFY(status.ok());
    QCOMPARE(waiting.state(), proto::ReserveResponse::WAITING);
    QCOMPARE(waiting.position(), 1u);
    QCOMPARE(waiting.waiting(), 1u);
    QCOMPARE(waiting.holder_owner(), std::string("bob@lab"));
    QCOMPARE(waiting.holder_run(), std::string("exp/bob"));
    QVERIFY(waiting.holder_committed());
    const proto::NodeInfo info = getInfo(*stub, &status);
    QCOMPARE(info.reservations_size(), 2);
    QCOMPARE(info.reservations(0).run_name(), std::string("exp/bob"));
    QVERIFY(info.reservations(0).holds());
    QCOMPARE(info.reservations(1).owner(), std::string("carol@lab"));
    QVERIFY(!info.reservations(1).holds());

    mine.set_owner("bob@lab");
    QVERIFY(startJob(*stub, mine).ok());
    const proto::ReserveResponse behindAJob =
        reserve(*stub, "carol", 9, proto::ReserveRequest::WAIT, &status);
    QCOMPARE(behindAJob.state(), proto::ReserveResponse::WAITING);
    QCOMPARE(behindAJob.job_owner(), std::string("bob@lab"));
    QCOMPARE(watchToEnd(*stub, "bobs-job").result.status(), std::string("completed"));
    // The job ended, the run still holds the node (a restart would start its next job).
    QCOMPARE(reserve(*stub, "carol", 9, proto::ReserveRequest::WAIT, &status).state(),
             proto::ReserveResponse::WAITING);
    QCOMPARE(reserve(*stub, "bob", 5, proto::ReserveRequest::RELEASE, &status).state(),
             proto::ReserveResponse::RELEASED);
    QCOMPARE(reserve(*stub, "carol", 9, proto::ReserveRequest::WAIT, &status).state(),
             proto::ReserveResponse::HELD);
    reserve(*stub, "carol", 9, proto::ReserveRequest::RELEASE, &status);
    QVERIFY(status.ok());
    // Nobody holds or waits: a job without a reservation starts as before.
    QVERIFY(startJob(*stub, startRequest("tool-job", tinySpec(5))).ok());
    QCOMPARE(watchToEnd(*stub, "tool-job").result.status(), std::string("completed"));
  }

  void getInfoDescribesTheNode() {
    NodeProcess node({"--name", "alpha", "--devices", "cpu:2", "--speed", "2.5", "--bandwidth-mbps",
                      "100", "--latency-ms", "1.5", "--threads", "1"});
    QVERIFY(node.ready());
    QVERIFY(QString::fromStdString(node.address()).startsWith("127.0.0.1:"));
    auto stub = nodeStub(node.address());
    grpc::Status status;
    const proto::NodeInfo info = getInfo(*stub, &status);
    QVERIFY2(status.ok(), status.error_message().c_str());
    QCOMPARE(info.protocol_version(), dtlab::remote::kProtocolVersion);
    QCOMPARE(info.program_version(), std::string(DTLAB_VERSION));
    QVERIFY(!info.hostname().empty());
    QCOMPARE(info.devices_size(), 1);
    QCOMPARE(info.devices(0).kind(), std::string("cpu"));
    QCOMPARE(info.devices(0).slots(), 2);
    QCOMPARE(info.speed(), 2.5);
    QCOMPARE(info.bandwidth_mbps(), 100.0);
    QCOMPARE(info.latency_ms(), 1.5);
    QCOMPARE(info.advertise_host(), std::string("127.0.0.1"));  // its specific --listen host
    QVERIFY(!info.busy());
    QVERIFY(info.cores() >= 1);
    QVERIFY(info.load() >= 0.0);
    const std::vector<std::string> caps(info.capabilities().begin(), info.capabilities().end());
    QVERIFY(std::find(caps.begin(), caps.end(), "gloo") != caps.end());
    QVERIFY(std::find(caps.begin(), caps.end(), "sync_allreduce") != caps.end());

    // Ping answers with the wall clock.
    grpc::ClientContext context;
    prepare(context);
    proto::PingRequest ping;
    ping.set_protocol_version(dtlab::remote::kProtocolVersion);
    proto::PingResponse pong;
    QVERIFY(stub->Ping(&context, ping, &pong).ok());
    const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    QVERIFY(std::abs(pong.unix_ms() - now) < 5000);

    // Another protocol version is refused, naming both.
    const uint32_t other = dtlab::remote::kProtocolVersion + 1;
    getInfo(*stub, &status, {}, other);
    QCOMPARE(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    QVERIFY(status.error_message().find("speaks version " + std::to_string(other)) !=
            std::string::npos);
    QVERIFY(status.error_message().find("speaks version " +
                                        std::to_string(dtlab::remote::kProtocolVersion)) !=
            std::string::npos);
  }

  void tokenIsCheckedOnEveryService() {
    NodeProcess node({"--token", "s3cret-token"});
    QVERIFY(node.ready());
    auto stub = nodeStub(node.address());
    grpc::Status status;
    getInfo(*stub, &status);
    QCOMPARE(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
    getInfo(*stub, &status, "wrong-guess");
    QCOMPARE(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
    QVERIFY(status.error_message().find("s3cret") == std::string::npos);
    QVERIFY(status.error_message().find("wrong-guess") == std::string::npos);
    getInfo(*stub, &status, "s3cret-token");
    QVERIFY2(status.ok(), status.error_message().c_str());

    // StartJob and the rendezvous service are guarded too.
    QCOMPARE(startJob(*stub, startRequest("j1", tinySpec())).error_code(),
             grpc::StatusCode::UNAUTHENTICATED);
    auto rendezvous = rendezvousStub(node.address());
    grpc::ClientContext context;
    prepare(context, "not-it");
    proto::SetRequest set;
    set.set_protocol_version(dtlab::remote::kProtocolVersion);
    set.set_key("k");
    set.set_value("v");
    proto::SetResponse setResponse;
    QCOMPARE(rendezvous->Set(&context, set, &setResponse).error_code(),
             grpc::StatusCode::UNAUTHENTICATED);
  }

  void badFlagsRefuseToStart() {
    const auto run = [](const QStringList& args, int* exitCode, QString* err) {
      QProcess process;
      process.start(kNodeBinary, args);
      if (!process.waitForFinished(10000)) {
        process.kill();
        process.waitForFinished();
        return false;
      }
      *exitCode = process.exitCode();
      *err = QString::fromUtf8(process.readAllStandardError());
      return process.exitStatus() == QProcess::NormalExit;
    };
    int code = 0;
    QString err;
    QVERIFY(run({"--listen", "0.0.0.0:0"}, &code, &err));
    QCOMPARE(code, 2);
    QVERIFY2(err.contains("--token"), qPrintable(err));
    QVERIFY(run({"--speed", "0"}, &code, &err));
    QCOMPARE(code, 2);
    QVERIFY2(err.contains("--speed"), qPrintable(err));
    QVERIFY(run({"--latency-ms", "abc"}, &code, &err));
    QCOMPARE(code, 2);
    QVERIFY2(err.contains("--latency-ms"), qPrintable(err));
    QVERIFY(run({"--devices", "cpu:0"}, &code, &err));
    QCOMPARE(code, 2);
    QVERIFY2(err.contains("--devices"), qPrintable(err));
    QVERIFY(run({"--advertise", "host1:7000"}, &code, &err));
    QCOMPARE(code, 2);
    QVERIFY2(err.contains("--advertise: expected a host name or address without a port"),
             qPrintable(err));
    QVERIFY(run({"--speed-schedule", "100"}, &code, &err));
    QCOMPARE(code, 2);
    QVERIFY2(err.contains("--speed-schedule: expected STEP:SPEED"), qPrintable(err));
    QVERIFY(run({"--speed-schedule", "100:0.3,50:1"}, &code, &err));
    QCOMPARE(code, 2);
    QVERIFY2(
        err.contains("--speed-schedule: at_step must come after the previous change's step 100"),
        qPrintable(err));
    QVERIFY(run({"--straggler", "2:10"}, &code, &err));
    QCOMPARE(code, 2);
    QVERIFY2(err.contains("--straggler: probability must be in [0, 1]"), qPrintable(err));
    QVERIFY(run({"--connect-timeout", "0"}, &code, &err));
    QCOMPARE(code, 2);
    QVERIFY2(err.contains("--connect-timeout"), qPrintable(err));
  }

  void invalidJobsAreRefusedNamingTheField() {
    NodeProcess node({});
    QVERIFY(node.ready());
    auto stub = nodeStub(node.address());
    {
      auto request = startRequest("bad-0", "{}");
      request.set_connect_timeout_ms(5);
      const grpc::Status refused = startJob(*stub, request);
      QCOMPARE(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
      QVERIFY2(refused.error_message().find("connect_timeout_ms") != std::string::npos,
               refused.error_message().c_str());
    }
    grpc::Status status = startJob(*stub, startRequest("bad-1", R"({"optimizer": {"lr": -1}})"));
    QCOMPARE(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    QVERIFY2(status.error_message().find("optimizer.lr") != std::string::npos,
             status.error_message().c_str());
    status = startJob(*stub, startRequest("bad-2", "{not json"));
    QCOMPARE(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    status = startJob(*stub, startRequest("bad-3", tinySpec(), 2, 2));
    QCOMPARE(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    QVERIFY2(status.error_message().find("rank") != std::string::npos,
             status.error_message().c_str());
    status = startJob(*stub, startRequest("bad-4", tinySpec(), 0, 2));  // no rendezvous
    QCOMPARE(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    QVERIFY(status.error_message().find("rendezvous_address") != std::string::npos);
    auto request = startRequest("bad-5", tinySpec());
    request.set_variant(3);
    status = startJob(*stub, request);
    QCOMPARE(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    QVERIFY(status.error_message().find("variant") != std::string::npos);
    status = startJob(*stub, startRequest("bad-6", std::string((1 << 20) + 1, ' ')));
    QCOMPARE(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    QVERIFY(status.error_message().find("spec_json") != std::string::npos);
    status = startJob(*stub, startRequest("bad id/with slash", tinySpec()));
    QCOMPARE(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    QVERIFY(status.error_message().find("job_id") != std::string::npos);
    // A GPU job on a daemon started without a GPU: refused, saying which flag gives it one.
    std::string gpuSpec = tinySpec();
    gpuSpec.insert(gpuSpec.size() - 1, R"(, "cluster": {"device": "cuda"})");
    status = startJob(*stub, startRequest("gpu-1", gpuSpec));
    QCOMPARE(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    QVERIFY2(status.error_message().find("has no GPU for cluster.device") != std::string::npos &&
                 status.error_message().find("--devices cuda:N") != std::string::npos,
             status.error_message().c_str());

    // Nothing was started by any of them, and an unknown job cannot be watched.
    QVERIFY(!getInfo(*stub, &status).busy());
    const WatchOutcome none = watchToEnd(*stub, "bad-1", {}, 5s);
    QCOMPARE(none.status.error_code(), grpc::StatusCode::NOT_FOUND);
  }

  void runsAOneRankJobToTheEnd() {
    NodeProcess node({"--name", "solo"});
    QVERIFY(node.ready());
    auto stub = nodeStub(node.address());
    auto request = startRequest("run-1", tinySpec(50));
    request.set_heartbeat_ms(100);
    grpc::Status status = startJob(*stub, request);
    QVERIFY2(status.ok(), status.error_message().c_str());

    const WatchOutcome outcome = watchToEnd(*stub, "run-1");
    QVERIFY2(outcome.status.ok(), outcome.status.error_message().c_str());
    QVERIFY(outcome.finished);
    QCOMPARE(outcome.result.status(), std::string("completed"));
    QCOMPARE(outcome.result.steps(), int64_t{50});
    QVERIFY(!outcome.result.param_checksum().empty());
    QVERIFY(outcome.result.has_test_accuracy());
    QCOMPARE(outcome.stepPoints, int64_t{50});
    QVERIFY(outcome.stepsIncreasing);
    QVERIFY(outcome.evalPoints >= 1);
    QVERIFY(outcome.maxPointsInOneMessage <= dtlab::remote::kMaxPointsPerUpdate);

    // The node is idle again; the result stays readable until the next job.
    QVERIFY(!getInfo(*stub, &status).busy());
    const WatchOutcome again = watchToEnd(*stub, "run-1", {}, 10s);
    QVERIFY(again.finished);
    QCOMPARE(again.result.param_checksum(), outcome.result.param_checksum());
    QCOMPARE(startJob(*stub, request).error_code(), grpc::StatusCode::ALREADY_EXISTS);
    QVERIFY(startJob(*stub, startRequest("run-2", tinySpec(10))).ok());
    QCOMPARE(watchToEnd(*stub, "run-1", {}, 5s).status.error_code(), grpc::StatusCode::NOT_FOUND);
    const WatchOutcome second = watchToEnd(*stub, "run-2");
    QCOMPARE(second.result.status(), std::string("completed"));
    QCOMPARE(second.result.steps(), int64_t{10});
  }

  void cancelStopsARunningJobAndABusyNodeRefuses() {
    NodeProcess node({"--name", "busy-node"});
    QVERIFY(node.ready());
    auto stub = nodeStub(node.address());
    proto::StartJobRequest first = startRequest("long-1", longSpec());
    first.set_owner("alice@lab");
    first.set_run_name("modes/async_ps");
    QVERIFY(startJob(*stub, first).ok());
    std::atomic<int64_t> steps{0};
    WatchOutcome outcome;
    std::thread watcher([&] { outcome = watchToEnd(*stub, "long-1", {}, 60s, &steps); });
    const bool running = waitUntil([&] { return steps.load() > 0; }, 30s);

    grpc::Status status;
    const proto::NodeInfo info = getInfo(*stub, &status);
    const grpc::Status refused = startJob(*stub, startRequest("long-2", tinySpec()));

    grpc::ClientContext context;
    prepare(context);
    proto::CancelJobRequest cancel;
    cancel.set_protocol_version(dtlab::remote::kProtocolVersion);
    cancel.set_job_id("long-1");
    proto::CancelJobResponse cancelled;
    const grpc::Status cancelStatus = stub->CancelJob(&context, cancel, &cancelled);
    watcher.join();

    QVERIFY(running);
    QVERIFY(info.busy());
    QCOMPARE(info.job_id(), std::string("long-1"));
    // Who runs what, and for how long: in GetInfo and in the refusal.
    QCOMPARE(info.job_owner(), std::string("alice@lab"));
    QCOMPARE(info.job_run(), std::string("modes/async_ps"));
    QVERIFY(info.job_seconds() >= 0.0 && info.job_seconds() < 60.0);
    QCOMPARE(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    QVERIFY2(refused.error_message().find("busy-node is busy with alice@lab's run "
                                          "'modes/async_ps' (job long-1), running for ") !=
                 std::string::npos,
             refused.error_message().c_str());
    QVERIFY(cancelStatus.ok());
    QVERIFY(cancelled.was_running());
    QVERIFY2(outcome.status.ok(), outcome.status.error_message().c_str());
    QVERIFY(outcome.finished);
    QCOMPARE(outcome.result.status(), std::string("cancelled"));
    QVERIFY(outcome.result.steps() < 1000000);

    // Cancelling again is harmless, and the node takes the next job.
    grpc::ClientContext again;
    prepare(again);
    QVERIFY(stub->CancelJob(&again, cancel, &cancelled).ok());
    QVERIFY(!cancelled.was_running());
    QVERIFY(startJob(*stub, startRequest("long-2", tinySpec(5))).ok());
    QCOMPARE(watchToEnd(*stub, "long-2").result.status(), std::string("completed"));
  }

  void sigtermStopsTheNodeCleanly() {
    NodeProcess node({});
    QVERIFY(node.ready());
    auto stub = nodeStub(node.address());
    QVERIFY(startJob(*stub, startRequest("term-1", longSpec())).ok());
    std::atomic<int64_t> steps{0};
    WatchOutcome outcome;
    std::thread watcher([&] { outcome = watchToEnd(*stub, "term-1", {}, 60s, &steps); });
    const bool running = waitUntil([&] { return steps.load() > 0; }, 30s);
    node.process().terminate();
    const bool exited = node.process().waitForFinished(20000);
    watcher.join();
    QVERIFY(running);
    QVERIFY(exited);
    QCOMPARE(node.process().exitStatus(), QProcess::NormalExit);
    QCOMPARE(node.process().exitCode(), 0);
    QVERIFY(outcome.finished);
    QCOMPARE(outcome.result.status(), std::string("cancelled"));
  }

  // Clients' idle connections (a channel after its call, a socket that never spoke) do not
  // hold the daemon's exit: shutdown cancels what the server still holds instead of waiting
  // out gRPC's deadline (3 s with such a connection open, before).
  void sigtermIsNotHeldByIdleConnections() {
    NodeProcess node({});
    QVERIFY(node.ready());
    auto stub = nodeStub(node.address());
    {
      grpc::ClientContext context;
      prepare(context);
      proto::GetInfoRequest request;
      request.set_protocol_version(dtlab::remote::kProtocolVersion);
      proto::NodeInfo info;
      QVERIFY(stub->GetInfo(&context, request, &info).ok());
    }
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_port = htons(dtlab::remote::parseHostPort(node.address(), "address").port);
    ::inet_pton(AF_INET, "127.0.0.1", &at.sin_addr);
    QVERIFY(::connect(fd, reinterpret_cast<const sockaddr*>(&at), sizeof at) == 0);
    const auto start = Clock::now();
    node.process().terminate();
    const bool exited = node.process().waitForFinished(20000);
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    ::close(fd);
    QVERIFY(exited);
    QCOMPARE(node.process().exitStatus(), QProcess::NormalExit);
    QCOMPARE(node.process().exitCode(), 0);
    QVERIFY2(took < 1500ms, qPrintable(QString("exit took %1 ms").arg(took.count())));
  }

  void rendezvousSetGetWait() {
    NodeProcess node({});
    QVERIFY(node.ready());
    auto stub = rendezvousStub(node.address());
    const auto set = [&](const std::string& key, const std::string& value) {
      grpc::ClientContext context;
      prepare(context);
      proto::SetRequest request;
      request.set_protocol_version(dtlab::remote::kProtocolVersion);
      request.set_key(key);
      request.set_value(value);
      proto::SetResponse response;
      return stub->Set(&context, request, &response);
    };
    const auto get = [&](const std::string& key, uint64_t timeoutMs, std::string* value) {
      grpc::ClientContext context;
      prepare(context);
      proto::GetRequest request;
      request.set_protocol_version(dtlab::remote::kProtocolVersion);
      request.set_key(key);
      request.set_timeout_ms(timeoutMs);
      proto::GetResponse response;
      const grpc::Status status = stub->Get(&context, request, &response);
      *value = response.value();
      return status;
    };
    QVERIFY(set("job/a", std::string("\0bytes", 6)).ok());
    std::string value;
    QVERIFY(get("job/a", 0, &value).ok());
    QCOMPARE(value, std::string("\0bytes", 6));

    // A missing key times out after the requested wait, naming the key.
    auto start = Clock::now();
    grpc::Status status = get("job/missing", 300, &value);
    auto waited = Clock::now() - start;
    QCOMPARE(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
    QVERIFY2(status.error_message().find("job/missing") != std::string::npos,
             status.error_message().c_str());
    // Marked as the server's own answer, which a client tells from its call's deadline.
    QCOMPARE(status.error_details(), std::string(dtlab::remote::kRendezvousKeysMissing));
    QVERIFY(waited >= 250ms && waited < 5s);

    // Get and Wait return as soon as another client sets the keys.
    grpc::Status getStatus, waitStatus;
    std::thread getter([&] { getStatus = get("job/late", 20000, &value); });
    std::thread waiter([&] {
      grpc::ClientContext context;
      prepare(context, {}, 30s);
      proto::WaitRequest request;
      request.set_protocol_version(dtlab::remote::kProtocolVersion);
      request.add_keys("job/late");
      request.add_keys("job/a");
      request.set_timeout_ms(20000);
      proto::WaitResponse response;
      waitStatus = stub->Wait(&context, request, &response);
    });
    // Both calls are pending on the node before the key comes (else they would only take a
    // value already there, a different path).
    auto nodeStubForInfo = nodeStub(node.address());
    const bool bothPending = waitUntil(
        [&] {
          grpc::Status infoStatus;
          const proto::NodeInfo info = getInfo(*nodeStubForInfo, &infoStatus);
          return infoStatus.ok() && info.rendezvous_waiters() == 2;
        },
        10s);
    start = Clock::now();
    QVERIFY(set("job/late", "here").ok());
    getter.join();
    waiter.join();
    QVERIFY2(bothPending, "the Get and the Wait were not both pending on the node within 10 s");
    QVERIFY(Clock::now() - start < 5s);
    QVERIFY2(getStatus.ok(), getStatus.error_message().c_str());
    QCOMPARE(value, std::string("here"));
    QVERIFY2(waitStatus.ok(), waitStatus.error_message().c_str());

    // Limits and version.
    status = set(std::string(2000, 'k'), "v");
    QCOMPARE(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    QVERIFY(status.error_message().find("key") != std::string::npos);
    status = set("job/big", std::string((1 << 20) + 1, 'v'));
    QCOMPARE(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    QVERIFY(status.error_message().find("value") != std::string::npos);
    grpc::ClientContext context;
    prepare(context);
    proto::GetRequest oldClient;
    oldClient.set_key("job/a");
    proto::GetResponse response;
    QCOMPARE(stub->Get(&context, oldClient, &response).error_code(),
             grpc::StatusCode::FAILED_PRECONDITION);
  }

  void glooStoreOverRendezvousBuildsAGroup() {
    NodeProcess node({"--token", "tok"});
    QVERIFY(node.ready());
    constexpr int kWorld = 2;
    constexpr int64_t kCount = 1001;
    std::vector<std::vector<float>> data(kWorld, std::vector<float>(kCount));
    std::vector<std::string> errors(kWorld);
    std::vector<std::thread> ranks;
    for (int r = 0; r < kWorld; ++r) {
      ranks.emplace_back([&, r] {
        try {
          dtlab::remote::RendezvousStoreOptions options;
          options.address = node.address();
          options.token = "tok";
          options.keyPrefix = "gloo-test-job";
          options.timeout = 20s;
          dtlab::remote::RendezvousStore store(options);
          dtlab::core::GlooOptions gloo;
          gloo.connectTimeout = 20s;
          dtlab::core::GlooCommunicator comm(store, r, kWorld, gloo);
          for (int64_t i = 0; i < kCount; ++i) data[r][i] = float(r + 1) * float(i);
          comm.allReduceSum(data[r].data(), kCount);
        } catch (const std::exception& e) {
          errors[r] = e.what();
        }
      });
    }
    for (auto& t : ranks) t.join();
    for (int r = 0; r < kWorld; ++r) {
      QVERIFY2(errors[r].empty(), errors[r].c_str());
      for (int64_t i = 0; i < kCount; ++i) QCOMPARE(data[r][i], 3.0f * float(i));
    }

    // A key nobody sets: a clear error naming it, after the store's timeout.
    dtlab::remote::RendezvousStoreOptions options;
    options.address = node.address();
    options.token = "tok";
    options.keyPrefix = "lonely";
    options.timeout = 200ms;
    dtlab::remote::RendezvousStore store(options);
    try {
      store.get("rank-1-address");
      QFAIL("get of a missing key returned");
    } catch (const dtlab::Error& e) {
      QVERIFY2(std::string(e.what()).find("lonely/rank-1-address") != std::string::npos, e.what());
    }
    options.token = "wrong";
    dtlab::remote::RendezvousStore unauthorised(options);
    try {
      unauthorised.set("k", {'v'});
      QFAIL("set with a wrong token succeeded");
    } catch (const dtlab::Error& e) {
      QVERIFY2(std::string(e.what()).find("UNAUTHENTICATED") != std::string::npos, e.what());
    }
  }

  void heartbeatsFlowAndCancelWorksWhileWaitingForPeers() {
    NodeProcess node({});
    QVERIFY(node.ready());
    auto stub = nodeStub(node.address());
    // Rank 0 of two, and rank 1 never comes: the job sits in the rendezvous, silent.
    auto request = startRequest("lonely-1", tinySpec(), 0, 2);
    request.set_rendezvous_address(node.address());
    request.set_heartbeat_ms(100);
    QVERIFY(startJob(*stub, request).ok());
    std::atomic<int> messages{0};
    WatchOutcome outcome;
    std::thread watcher([&] {
      grpc::ClientContext context;
      prepare(context, {}, 60s);
      proto::WatchJobRequest watch;
      watch.set_protocol_version(dtlab::remote::kProtocolVersion);
      watch.set_job_id("lonely-1");
      auto reader = stub->WatchJob(&context, watch);
      proto::JobUpdate update;
      while (reader->Read(&update)) {
        ++messages;
        if (update.finished()) {
          outcome.finished = true;
          outcome.result = update.result();
        }
      }
      outcome.status = reader->Finish();
    });
    // In 1.2 s node samples alone would give 2 messages; heartbeats every 100 ms give about
    // 12: 6 come within that time only if the heartbeats flow.
    const auto watchFrom = Clock::now();
    const bool flowing = waitUntil([&] { return messages.load() >= 6; }, 1200ms);
    const double flowingAfterS = std::chrono::duration<double>(Clock::now() - watchFrom).count();
    const int messagesSeen = messages.load();
    // The job sits in the rendezvous, waiting for rank 1's address: a Wait pending on the node.
    grpc::Status infoStatus;
    const bool inRendezvous = waitUntil(
        [&] { return getInfo(*stub, &infoStatus).rendezvous_waiters() >= 1 && infoStatus.ok(); },
        10s);
    grpc::ClientContext context;
    prepare(context);
    proto::CancelJobRequest cancel;
    cancel.set_protocol_version(dtlab::remote::kProtocolVersion);
    cancel.set_job_id("lonely-1");
    proto::CancelJobResponse cancelled;
    const auto cancelAt = Clock::now();
    QVERIFY(stub->CancelJob(&context, cancel, &cancelled).ok());
    watcher.join();
    const auto stopTook = Clock::now() - cancelAt;
    QVERIFY2(flowing,
             (std::to_string(messagesSeen) + " messages in " + std::to_string(flowingAfterS) + " s")
                 .c_str());
    QVERIFY2(inRendezvous, "no rendezvous wait pending on the node within 10 s");
    QVERIFY(cancelled.was_running());
    QVERIFY(outcome.finished);
    QCOMPARE(outcome.result.status(), std::string("cancelled"));
    QVERIFY(stopTook < 5s);
  }

  void twoNodesRunOneJobTogether() {
    NodeProcess first({"--name", "n0"});
    NodeProcess second({"--name", "n1", "--latency-ms", "0.1"});
    QVERIFY(first.ready() && second.ready());
    auto stub0 = nodeStub(first.address());
    auto stub1 = nodeStub(second.address());
    for (int rank = 0; rank < 2; ++rank) {
      auto request = startRequest("pair-1", tinySpec(20), rank, 2);
      request.set_rendezvous_address(first.address());
      QVERIFY(startJob(rank == 0 ? *stub0 : *stub1, request).ok());
    }
    WatchOutcome outcome1;
    std::thread watcher([&] { outcome1 = watchToEnd(*stub1, "pair-1"); });
    const WatchOutcome outcome0 = watchToEnd(*stub0, "pair-1");
    watcher.join();
    QVERIFY(outcome0.finished && outcome1.finished);
    QVERIFY2(outcome0.result.status() == "completed", outcome0.result.error().c_str());
    QVERIFY2(outcome1.result.status() == "completed", outcome1.result.error().c_str());
    QCOMPARE(outcome0.result.steps(), int64_t{20});
    QCOMPARE(outcome0.result.param_checksum(), outcome1.result.param_checksum());
    QCOMPARE(outcome0.stepPoints, int64_t{20});
    QCOMPARE(outcome1.stepPoints, int64_t{20});
  }

  // A daemon with two CPU worker slots runs two ranks of one job, one in each slot, watched
  // apart; a slot it does not have, or one already taken by the job, is refused by name.
  void oneNodeRunsTwoRanksInItsSlots() {
    NodeProcess node({"--name", "pair-host", "--devices", "cpu:2"});
    QVERIFY(node.ready());
    auto stub = nodeStub(node.address());
    auto outside = startRequest("slots-0", tinySpec(20), 0, 2);
    outside.set_rendezvous_address(node.address());
    outside.set_slot(2);
    grpc::Status status = startJob(*stub, outside);
    QCOMPARE(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    QVERIFY2(status.error_message().find("slot: must be in [0, 2)") != std::string::npos &&
                 status.error_message().find("pair-host has 2 worker slots") != std::string::npos,
             status.error_message().c_str());
    for (int rank = 0; rank < 2; ++rank) {
      auto request = startRequest("slots-1", tinySpec(20), rank, 2);
      request.set_rendezvous_address(node.address());
      request.set_slot(rank);
      status = startJob(*stub, request);
      QVERIFY2(status.ok(), status.error_message().c_str());
    }
    auto again = startRequest("slots-1", tinySpec(20), 1, 2);
    again.set_rendezvous_address(node.address());
    again.set_slot(1);
    status = startJob(*stub, again);
    QCOMPARE(status.error_code(), grpc::StatusCode::ALREADY_EXISTS);
    QVERIFY2(status.error_message().find("slot 1") != std::string::npos,
             status.error_message().c_str());
    WatchOutcome outcome1;
    std::thread watcher([&] { outcome1 = watchToEnd(*stub, "slots-1", {}, 60s, nullptr, 1); });
    const WatchOutcome outcome0 = watchToEnd(*stub, "slots-1");
    watcher.join();
    QVERIFY(outcome0.finished && outcome1.finished);
    QVERIFY2(outcome0.result.status() == "completed", outcome0.result.error().c_str());
    QVERIFY2(outcome1.result.status() == "completed", outcome1.result.error().c_str());
    QCOMPARE(outcome0.stepPoints, int64_t{20});
    QCOMPARE(outcome1.stepPoints, int64_t{20});
    QCOMPARE(outcome0.result.param_checksum(), outcome1.result.param_checksum());
    QCOMPARE(watchToEnd(*stub, "slots-1", {}, 5s, nullptr, 5).status.error_code(),
             grpc::StatusCode::NOT_FOUND);
  }
};

QTEST_GUILESS_MAIN(TestNode)
#include "test_node.moc"
