#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/train/parameter_server.h"
#include "remote/proto/dtlab.grpc.pb.h"

namespace dtlab::core {
class AbortSignal;
}

namespace dtlab::remote {

struct ParameterClientOptions {
  std::string jobId;
  std::vector<std::string> addresses;  // shard k's daemon, host:port
  std::vector<std::string> names;      // how the coordinator names those nodes (messages)
  std::string token;
  // How long Init keeps asking a shard that has not accepted the job yet.
  std::chrono::milliseconds connectTimeout{30000};
  std::chrono::milliseconds callTimeout{15000};  // every other call
  const core::AbortSignal* abort = nullptr;      // ends waits and retries
};

// core::ParameterClient over the ParameterServer service of the shards' daemons. The calls of
// one pull or push (one per block) are issued together on gRPC's callback API and awaited
// together, so the shards work side by side. Pull and Push use gRPC's buffers
// (large_field.h): a push copies each block's gradient once, into the message; a pull copies
// each block's values once, from the reply into the model, as that reply arrives. Failures throw
// CommError naming the shard's node: kPeerClosed when it cannot be reached (a killed shard: at
// once), kTimeout when it does not answer within callTimeout, kAborted when the job aborts.
class GrpcParameterClient final : public core::ParameterClient {
 public:
  GrpcParameterClient(std::vector<core::PsBlock> layout, ParameterClientOptions options);
  ~GrpcParameterClient() override;

  const std::vector<core::PsBlock>& layout() const override { return layout_; }
  void init(const float* params) override;
  void reset(const float* params, int64_t version, int64_t epoch) override;
  double waitForClock(int64_t clock) override;
  core::PullOutcome pull(float* params, std::vector<int64_t>& versions) override;
  core::PushOutcome push(const float* grads, const std::vector<int64_t>& basedOn,
                         const core::WorkerReport& report) override;
  core::BoardState agree(const core::WorkerReport& report) override;
  void leave(int worker) override;
  // Every block's Snapshot, issued together like a pull (not counted as training traffic).
  core::ServerSnapshot snapshot() override;
  int64_t bytesSent() const override { return bytesSent_.load(); }
  int64_t bytesReceived() const override { return bytesReceived_.load(); }

 private:
  struct Shard;
  core::BoardState report(const core::WorkerReport& report);
  // Sends every block its values (init: epoch 0, retrying a shard that has not accepted the
  // job yet; reset: epoch > 0).
  void sendValues(const float* params, int64_t version, int64_t epoch);
  [[noreturn]] void fail(int shard, const char* what, const grpc::Status& status) const;

  std::vector<core::PsBlock> layout_;
  ParameterClientOptions options_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::atomic<int64_t> bytesSent_{0};
  std::atomic<int64_t> bytesReceived_{0};
};

}  // namespace dtlab::remote
