// RegroupJob on a real dtlab-node: who goes on after a lost node (on_node_loss "continue" of a
// strategy with a collective group) is refused, naming why, where it cannot apply.
#include <cstdint>
#include <string>
#include <vector>

#include "tests/remote/node_rpc.h"

// After the protocol headers: Qt's `slots` macro would otherwise rename DeviceInfo::slots().
#include <QtTest/QtTest>
#undef slots

#include "tests/remote/node_process.h"

using dtlab::test::NodeProcess;
using namespace dtlab::test::rpc;

class TestNodeRegroup : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  // RegroupJob (who goes on after a lost node) is refused, naming why, where it cannot apply:
  // a variant that fails on a lost node, a rank not among the members, an old generation.
  void regroupIsRefusedWhereItCannotApply() {
    NodeProcess node({});
    QVERIFY(node.ready());
    auto stub = nodeStub(node.address());
    auto regroup = [&](const std::string& job, uint32_t generation, std::vector<int> members,
                       proto::RegroupJobResponse* response = nullptr) {
      grpc::ClientContext context;
      prepare(context);
      proto::RegroupJobRequest request;
      request.set_protocol_version(dtlab::remote::kProtocolVersion);
      request.set_job_id(job);
      request.set_generation(generation);
      for (int m : members) request.add_members(m);
      request.set_rendezvous_address(node.address());
      proto::RegroupJobResponse ignored;
      return stub->RegroupJob(&context, request, response != nullptr ? response : &ignored);
    };
    // No members: refused before any job is looked at. An unknown job: nothing to do.
    QCOMPARE(regroup("nobody", 1, {}).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    proto::RegroupJobResponse response;
    QVERIFY(regroup("nobody", 1, {0}, &response).ok());
    QVERIFY(!response.was_running());

    // Rank 0 of two waits in the rendezvous for a rank 1 that never comes.
    const auto waiting = [&](const std::string& job, const std::string& variant) {
      std::string spec = tinySpec(1000000);
      spec.back() = ',';
      auto request = startRequest(job, spec + R"("variants": [)" + variant + "]}", 0, 2);
      request.set_rendezvous_address(node.address());
      return startJob(*stub, request);
    };
    QVERIFY(waiting("sync-1", R"({"strategy": "sync_allreduce"})").ok());
    grpc::Status refused = regroup("sync-1", 1, {0});
    QCOMPARE(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    QVERIFY2(refused.error_message().find("on_node_loss is not \"continue\"") != std::string::npos,
             refused.error_message().c_str());
    cancelJob(*stub, "sync-1");
    QVERIFY(waitUntil([&] { return !busy(*stub); }, 10s));

    QVERIFY(waiting("local-1", R"({"strategy": "local_sgd", "on_node_loss": "continue"})").ok());
    refused = regroup("local-1", 1, {1});
    QCOMPARE(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    QVERIFY2(refused.error_message().find("rank 0 of job local-1 runs here and is not among") !=
                 std::string::npos,
             refused.error_message().c_str());
    QVERIFY(regroup("local-1", 1, {0}, &response).ok());
    QVERIFY(response.was_running());
    refused = regroup("local-1", 1, {0});
    QVERIFY2(refused.error_message().find("generation 1 is not above 1") != std::string::npos,
             refused.error_message().c_str());
    cancelJob(*stub, "local-1");
    QVERIFY(waitUntil([&] { return !busy(*stub); }, 10s));
  }
};

QTEST_GUILESS_MAIN(TestNodeRegroup)
#include "test_node_regroup.moc"
