// A parameter-server shard on a real dtlab-node seeded from a resume checkpoint: the shard's
// blocks, versions and board are where the checkpoint left them before any worker reaches
// them, its Snapshot RPC (what rank 0 takes checkpoints with) returns them, and a checkpoint
// that does not fit the job is refused naming the shard.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/spec/spec_json.h"
#include "tests/remote/node_rpc.h"

// After the protocol headers: Qt's `slots` macro would otherwise rename DeviceInfo::slots().
#include <QtTest/QtTest>
#undef slots

#include "core/spec/experiment_spec.h"
#include "core/train/local_trainer.h"
#include "core/train/ps_checkpoint.h"
#include "tests/remote/node_process.h"

using dtlab::test::NodeProcess;
using namespace dtlab::test::rpc;
namespace core = dtlab::core;

namespace {

// ssp with no slack: a worker resumed ahead of another waits for it before its next push.
std::string sspSpec() {
  std::string spec = tinySpec(1000000);
  spec.back() = ',';
  return spec + R"("variants": [{"strategy": "ssp", "staleness": 0, "ps_shards": 1}]})";
}

// A checkpoint of a two-worker server of `spec`: values ramped, one push applied, worker 0 at
// clock 5 and worker 1 at clock 2.
core::Checkpoint twoWorkerCheckpoint(const core::ExperimentSpec& spec) {
  const int64_t total = core::plannedSteps(spec, spec.dataset.trainSize / spec.training.batchSize);
  auto host = core::makeParameterHost(spec, 0, 2, -1, total);
  const std::vector<core::PsBlock> layout = core::psLayoutFor(spec, 0, 2);
  core::LocalParameterClient client(*host, layout, 0);
  std::vector<float> values(static_cast<std::size_t>(layout.back().end));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.01f * float(int(i % 13) - 6);
  client.init(values.data());
  std::vector<int64_t> versions;
  client.pull(values.data(), versions);
  core::WorkerReport report;
  report.clock = 5;
  client.push(std::vector<float>(values.size(), 0.5f).data(), versions, report);
  report.worker = 1;
  report.clock = 2;
  client.agree(report);
  core::Checkpoint c =
      core::serverCheckpoint(client.snapshot(), layout, core::psUpdatesPlanned(total, 2));
  c.strategy = "ssp";
  c.optimizer = "sgd";
  return c;
}

// Block `block`'s snapshot from the shard's daemon: set aside (STAGE), then fetched.
grpc::Status takeSnapshot(proto::ParameterServer::Stub& ps, const std::string& job, int block,
                          proto::PsSnapshotResponse& out) {
  for (auto mode : {proto::PsSnapshotRequest::STAGE, proto::PsSnapshotRequest::FETCH_STAGED}) {
    grpc::ClientContext context;
    prepare(context);
    proto::PsSnapshotRequest r;
    r.set_protocol_version(dtlab::remote::kProtocolVersion);
    r.set_job_id(job);
    r.set_block(block);
    r.set_mode(mode);
    const grpc::Status status = ps.Snapshot(&context, r, &out);
    if (!status.ok()) return status;
  }
  return grpc::Status::OK;
}

std::string encoded(const core::Checkpoint& c) {
  const std::vector<unsigned char> bytes = core::encodeCheckpoint(c);
  return {bytes.begin(), bytes.end()};
}

}  // namespace

class TestNodeShardRestore : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void aShardStartsWhereTheCheckpointLeftIt() {
    NodeProcess node({});
    QVERIFY(node.ready());
    auto stub = nodeStub(node.address());
    auto ps = proto::ParameterServer::NewStub(dtlab::remote::makeNodeChannel(node.address()));
    const std::string specText = sspSpec();
    const core::ExperimentSpec spec = core::parseExperimentSpec(nlohmann::json::parse(specText));
    const core::Checkpoint checkpoint = twoWorkerCheckpoint(spec);
    auto request = [&](const std::string& job, const core::Checkpoint& c) {
      proto::StartJobRequest r = startRequest(job, specText, 0, 2);
      r.set_rendezvous_address(node.address());
      r.add_ps_addresses(node.address());
      r.set_resume_staged(true);
      const grpc::Status staged = stageCheckpoint(*stub, job, encoded(c));
      if (!staged.ok()) qWarning("staging failed: %s", staged.error_message().c_str());
      return r;
    };

    // Another optimizer's checkpoint: refused, naming the shard, and nothing installed.
    core::Checkpoint adam = checkpoint;
    adam.optimizer = "adam";
    grpc::Status status = startJob(*stub, request("refused", adam));
    QCOMPARE(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    QVERIFY2(status.error_message().find("resume_staged: cannot seed parameter-server shard "
                                         "0 from it: the checkpoint's optimizer is adam") !=
                 std::string::npos,
             status.error_message().c_str());
    QVERIFY(!busy(*stub));

    // Rank 0 resumes at its clock 5 and waits for worker 1 (at 2): nothing moves the blocks.
    QVERIFY(startJob(*stub, request("restored", checkpoint)).ok());
    auto snapshot = [&](const std::string& job, int block, proto::PsSnapshotResponse& out) {
      return takeSnapshot(*ps, job, block, out);
    };
    proto::PsSnapshotResponse taken;
    {
      // A fetch with nothing set aside is refused, naming the block.
      proto::PsSnapshotRequest r;
      r.set_protocol_version(dtlab::remote::kProtocolVersion);
      r.set_job_id("restored");
      r.set_mode(proto::PsSnapshotRequest::FETCH_STAGED);
      grpc::Status status;
      QVERIFY(waitUntil(
          [&] {
            grpc::ClientContext context;
            prepare(context);
            status = ps->Snapshot(&context, r, &taken);
            return status.error_code() != grpc::StatusCode::NOT_FOUND;
          },
          10s));
      QVERIFY2(
          status.error_message().find("no snapshot of block 0 was staged") != std::string::npos,
          status.error_message().c_str());
    }
    QVERIFY(waitUntil([&] { return snapshot("restored", 0, taken).ok(); }, 10s));
    const std::vector<int64_t> clocks(taken.clocks().begin(), taken.clocks().end());
    QCOMPARE(clocks, (std::vector<int64_t>{5, 2}));
    QCOMPARE(taken.version(),
             checkpoint.strategyState["blocks"][0][2].get<int64_t>());  // one push, kept
    std::vector<float> values(checkpoint.params.size());
    QCOMPARE(taken.values().size(), values.size() * sizeof(float));
    std::memcpy(values.data(), taken.values().data(), taken.values().size());
    QCOMPARE(values, checkpoint.params);
    QCOMPARE(taken.optimizer_state_size(), 1);  // SGD's momentum, as it was
    std::memcpy(values.data(), taken.optimizer_state(0).data(), values.size() * sizeof(float));
    QCOMPARE(values, checkpoint.optimizerState[0]);

    // Blocks it does not serve, and jobs it does not know, are refused naming them.
    proto::PsSnapshotResponse ignored;
    status = snapshot("restored", 7, ignored);
    QCOMPARE(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    QVERIFY2(status.error_message().find("block: 7") != std::string::npos,
             status.error_message().c_str());
    QCOMPARE(snapshot("nobody", 0, ignored).error_code(), grpc::StatusCode::NOT_FOUND);
    cancelJob(*stub, "restored");
    QVERIFY(waitUntil([&] { return !busy(*stub); }, 10s));
  }

  // A checkpoint far larger than one message reaches the node in parts and seeds its shard; a
  // damaged one, parts out of order, a job that changes between parts and a start with
  // nothing staged are refused, each naming what is wrong, and nothing is installed.
  void checkpointsOfAnySizeAreStagedInPartsAndVerified() {
    NodeProcess node({});
    QVERIFY(node.ready());
    auto stub = nodeStub(node.address());
    auto ps = proto::ParameterServer::NewStub(dtlab::remote::makeNodeChannel(node.address()));
    // 2.5 M parameters (20 MB of checkpoint with momentum): over four times the request limit.
    std::string specText = sspSpec();
    specText.replace(specText.find(R"("hidden": [16])"), 14, R"("hidden": [2048, 1200])");
    const core::ExperimentSpec spec = core::parseExperimentSpec(nlohmann::json::parse(specText));
    const core::Checkpoint checkpoint = twoWorkerCheckpoint(spec);
    QVERIFY(checkpoint.params.size() > 2'400'000);
    const std::string bytes = encoded(checkpoint);
    QVERIFY(bytes.size() > 4 * std::size_t{dtlab::remote::kMaxRequestBytes});

    proto::StartJobRequest start = startRequest("big", specText, 0, 2);
    start.set_rendezvous_address(node.address());
    start.add_ps_addresses(node.address());
    start.set_resume_staged(true);
    grpc::Status status = startJob(*stub, start);  // nothing staged yet
    QCOMPARE(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    QVERIFY2(
        status.error_message().find("no checkpoint is staged for job big") != std::string::npos,
        status.error_message().c_str());

    std::string damaged = bytes;
    damaged[damaged.size() / 2] ^= 0x20;
    status = stageCheckpoint(*stub, "big", damaged);
    QCOMPARE(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    QVERIFY2(status.error_message().find("checkpoint of job big") != std::string::npos,
             status.error_message().c_str());
    status = stageCheckpoint(*stub, "big", bytes, 1 << 20, [](proto::CheckpointPart& part) {
      if (part.offset() == (3 << 20)) part.set_offset(5 << 20);
    });
    QCOMPARE(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    QVERIFY2(status.error_message().find("offset 5242880 where 3145728") != std::string::npos,
             status.error_message().c_str());
    status = stageCheckpoint(*stub, "big", bytes, 1 << 20, [](proto::CheckpointPart& part) {
      if (part.offset() > 0) part.set_job_id("other");
    });
    QCOMPARE(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    QVERIFY2(status.error_message().find("names job 'other'") != std::string::npos,
             status.error_message().c_str());
    status =
        stageCheckpoint(*stub, "big", bytes.substr(0, bytes.size() / 2), 1 << 20,
                        [&](proto::CheckpointPart& part) { part.set_total_bytes(bytes.size()); });
    QCOMPARE(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    QVERIFY2(status.error_message().find("the parts ended at") != std::string::npos,
             status.error_message().c_str());
    QCOMPARE(startJob(*stub, start).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    QVERIFY(!busy(*stub));

    QVERIFY(stageCheckpoint(*stub, "big", bytes).ok());
    status = startJob(*stub, start);
    QVERIFY2(status.ok(), status.error_message().c_str());
    proto::PsSnapshotResponse taken;
    std::vector<float> values;
    QVERIFY(waitUntil(
        [&] {
          // Every block of the shard as the checkpoint left it.
          values.clear();
          for (int block = 0;; ++block) {
            if (!takeSnapshot(*ps, "big", block, taken).ok()) return block > 0;
            const std::size_t at = values.size();
            values.resize(at + taken.values().size() / sizeof(float));
            std::memcpy(values.data() + at, taken.values().data(), taken.values().size());
          }
        },
        10s));
    QCOMPARE(values.size(), checkpoint.params.size());
    QVERIFY(values == checkpoint.params);
    cancelJob(*stub, "big");
    QVERIFY(waitUntil([&] { return !busy(*stub); }, 10s));
  }
};

QTEST_GUILESS_MAIN(TestNodeShardRestore)
#include "test_node_shard_restore.moc"
