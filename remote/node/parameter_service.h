#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/train/parameter_server.h"
#include "remote/node/parameter_table.h"
#include "remote/proto/dtlab.grpc.pb.h"

namespace dtlab::remote {

class ParameterStreamServer;

// The ParameterServer service (remote/proto/dtlab.proto): a thin shell over the blocks and
// the board of core::ParameterHost. Every call: bearer token (UNAUTHENTICATED), protocol
// version (FAILED_PRECONDITION), the job (NOT_FOUND), the block or worker index and payload
// size (INVALID_ARGUMENT naming the field). A WaitClock that cannot be answered yet holds no
// gRPC thread: the board answers it when the slowest worker gets there, or the call ends
// with the caller's deadline (CANCELLED on this side). Pull and Push, the data plane, work on
// gRPC's buffers (large_field.h): a pull's values are copied once, from the block into the
// reply; a push's gradient once, from the request into a buffer the handler's thread keeps.
class ParameterService final : public proto::ParameterServer::WithRawCallbackMethod_Pull<
                                   proto::ParameterServer::WithRawCallbackMethod_Push<
                                       proto::ParameterServer::CallbackService>> {
 public:
  // stream: where pulls and pushes are also served outside gRPC (null: nowhere, OpenStream
  // answers FAILED_PRECONDITION).
  ParameterService(ParameterTable& table, std::string token,
                   ParameterStreamServer* stream = nullptr);

  grpc::ServerUnaryReactor* Init(grpc::CallbackServerContext* context,
                                 const proto::PsInitRequest* request,
                                 proto::PsInitResponse* response) override;
  // PsPullRequest in, PsPullResponse out.
  grpc::ServerUnaryReactor* Pull(grpc::CallbackServerContext* context,
                                 const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;
  // PsPushRequest in, PsPushResponse out.
  grpc::ServerUnaryReactor* Push(grpc::CallbackServerContext* context,
                                 const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Report(grpc::CallbackServerContext* context,
                                   const proto::PsReportRequest* request,
                                   proto::PsBoard* response) override;
  grpc::ServerUnaryReactor* WaitClock(grpc::CallbackServerContext* context,
                                      const proto::PsWaitRequest* request,
                                      proto::PsWaitResponse* response) override;
  grpc::ServerUnaryReactor* Leave(grpc::CallbackServerContext* context,
                                  const proto::PsLeaveRequest* request,
                                  proto::PsLeaveResponse* response) override;
  grpc::ServerUnaryReactor* Snapshot(grpc::CallbackServerContext* context,
                                     const proto::PsSnapshotRequest* request,
                                     proto::PsSnapshotResponse* response) override;
  grpc::ServerUnaryReactor* OpenStream(grpc::CallbackServerContext* context,
                                       const proto::PsStreamRequest* request,
                                       proto::PsStreamResponse* response) override;

 private:
  // The job's host after the common checks, or the status that refuses the call.
  grpc::Status hostFor(grpc::CallbackServerContext& context, uint32_t protocolVersion,
                       const std::string& jobId, std::shared_ptr<core::ParameterHost>& host);

  ParameterTable& table_;
  const std::string token_;
  ParameterStreamServer* stream_;
};

// Board state on the wire and back.
void toProto(const core::BoardState& state, proto::PsBoard& out);
core::BoardState fromProto(const proto::PsBoard& board);

}  // namespace dtlab::remote
