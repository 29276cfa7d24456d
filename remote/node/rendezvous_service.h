#pragma once

#include <string>

#include "remote/node/rendezvous_table.h"
#include "remote/proto/dtlab.grpc.pb.h"

namespace dtlab::remote {

// The Rendezvous service every dtlab-node hosts; a job's ranks all use the one on rank 0's
// daemon to exchange what their collective group needs (Gloo: each rank's TCP addresses).
//
// Protocol, per call:
//   1. authenticate (bearer token when the node has one) -> UNAUTHENTICATED,
//   2. protocol_version must be kProtocolVersion          -> FAILED_PRECONDITION,
//   3. key <= 1 KiB, value <= 1 MiB, <= 4096 keys per Wait -> INVALID_ARGUMENT naming it,
//   4. Set stores and wakes waiters; Get/Wait answer at once when the keys exist, else wait
//      up to min(timeout_ms, 60 s) without holding a gRPC thread (see RendezvousTable) and
//      end with DEADLINE_EXCEEDED naming the missing keys. timeout_ms = 0 does not wait.
// Keys are namespaced by the client ("<job id>/..."); the node service clears other jobs'
// keys when a new job starts, so the table does not grow across runs.
class RendezvousService final : public proto::Rendezvous::CallbackService {
 public:
  RendezvousService(RendezvousTable& table, std::string token);

  grpc::ServerUnaryReactor* Set(grpc::CallbackServerContext* context,
                                const proto::SetRequest* request,
                                proto::SetResponse* response) override;
  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* context,
                                const proto::GetRequest* request,
                                proto::GetResponse* response) override;
  grpc::ServerUnaryReactor* Wait(grpc::CallbackServerContext* context,
                                 const proto::WaitRequest* request,
                                 proto::WaitResponse* response) override;

 private:
  RendezvousTable& table_;
  const std::string token_;
};

}  // namespace dtlab::remote
