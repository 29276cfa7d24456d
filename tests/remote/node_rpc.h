#pragma once
// Calls on a dtlab-node that the daemon tests share: stubs, a tiny spec, StartJob, GetInfo and
// CancelJob with a deadline. Include before Qt's headers, or after `#undef slots` (Qt's macro
// would otherwise rename DeviceInfo::slots()).
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "remote/common/auth.h"
#include "remote/common/client.h"
#include "remote/common/protocol.h"
#include "remote/proto/dtlab.grpc.pb.h"
#include "tests/support/wait.h"

namespace dtlab::test::rpc {

namespace proto = dtlab::remote::proto;
using namespace std::chrono_literals;

inline std::unique_ptr<proto::NodeService::Stub> nodeStub(const std::string& address) {
  return proto::NodeService::NewStub(dtlab::remote::makeNodeChannel(address));
}

inline void prepare(grpc::ClientContext& context, const std::string& token = {},
                    std::chrono::milliseconds timeout = 10s) {
  dtlab::remote::prepareClientContext(context, token, timeout);
}

// Tiny and quick: 50 steps of a small MLP on 2000 blobs.
inline std::string tinySpec(int64_t maxSteps = 50) {
  return R"({"name": "tiny", "seed": 7,
    "dataset": {"kind": "gaussian_blobs", "train_size": 2000, "test_size": 200, "classes": 4,
                "features": 8},
    "model": {"hidden": [16]},
    "training": {"batch_size": 32, "epochs": 0, "max_steps": )" +
         std::to_string(maxSteps) + R"(, "eval_interval": 25, "threads": 1}})";
}

inline proto::StartJobRequest startRequest(const std::string& jobId, const std::string& spec,
                                           int rank = 0, int world = 1) {
  proto::StartJobRequest request;
  request.set_protocol_version(dtlab::remote::kProtocolVersion);
  request.set_job_id(jobId);
  request.set_spec_json(spec);
  request.set_variant(0);
  request.set_rank(rank);
  request.set_world_size(world);
  request.set_node_name("node-under-test");
  request.set_reached_host("127.0.0.1");
  return request;
}

inline grpc::Status startJob(proto::NodeService::Stub& stub, const proto::StartJobRequest& request,
                             const std::string& token = {}) {
  grpc::ClientContext context;
  prepare(context, token);
  proto::StartJobResponse response;
  return stub.StartJob(&context, request, &response);
}

using dtlab::test::waitUntil;

inline proto::NodeInfo getInfo(proto::NodeService::Stub& stub, grpc::Status* status,
                               const std::string& token = {},
                               uint32_t version = dtlab::remote::kProtocolVersion) {
  grpc::ClientContext context;
  prepare(context, token);
  proto::GetInfoRequest request;
  request.set_protocol_version(version);
  proto::NodeInfo info;
  *status = stub.GetInfo(&context, request, &info);
  return info;
}

// Aborts the job (errors ignored: it may have ended).
inline void cancelJob(proto::NodeService::Stub& stub, const std::string& jobId) {
  grpc::ClientContext context;
  prepare(context);
  proto::CancelJobRequest request;
  request.set_protocol_version(dtlab::remote::kProtocolVersion);
  request.set_job_id(jobId);
  request.set_abort(true);
  proto::CancelJobResponse response;
  static_cast<void>(stub.CancelJob(&context, request, &response));
}

// Stages `bytes` for job `jobId` in parts of `partBytes` (StageCheckpoint), each part as
// `edit` leaves it (a test breaks the protocol there); the node's status.
inline grpc::Status stageCheckpoint(proto::NodeService::Stub& stub, const std::string& jobId,
                                    const std::string& bytes,
                                    std::size_t partBytes = dtlab::remote::kCheckpointPartBytes,
                                    const std::function<void(proto::CheckpointPart&)>& edit = {}) {
  grpc::ClientContext context;
  prepare(context);
  proto::StageCheckpointResponse response;
  auto writer = stub.StageCheckpoint(&context, &response);
  for (std::size_t offset = 0; offset < bytes.size(); offset += partBytes) {
    proto::CheckpointPart part;
    part.set_protocol_version(dtlab::remote::kProtocolVersion);
    part.set_job_id(jobId);
    part.set_total_bytes(bytes.size());
    part.set_offset(offset);
    part.set_data(bytes.substr(offset, partBytes));
    if (edit) edit(part);
    if (!writer->Write(part)) break;
  }
  writer->WritesDone();
  return writer->Finish();
}

inline bool busy(proto::NodeService::Stub& stub) {
  grpc::Status status;
  return getInfo(stub, &status).busy();
}

}  // namespace dtlab::test::rpc
