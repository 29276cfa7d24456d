#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/train/parameter_server.h"
#include "remote/node/parameter_stream.h"
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
  // Pulls and pushes over each shard's stream where it has one (parameter_stream.h); false:
  // always over gRPC (the benchmark's comparison).
  bool stream = true;
};

// core::ParameterClient over the ParameterServer service of the shards' daemons. Pulls and
// pushes go over a shard's stream (parameter_stream.h) where its daemon serves one (plain
// text; opened at the first of them, through OpenStream): a push sends each block's gradient
// straight from the model, a pull's values land in a buffer and are copied into the model,
// measuring the distance, as each block arrives. Elsewhere (TLS, an unreachable stream port)
// they are gRPC calls, one per block, issued together on gRPC's callback API and awaited
// together, on gRPC's buffers (large_field.h): a push copies each block's gradient once,
// into the message; a pull copies each block's values once, from the reply into the model.
// Either way every shard works side by side. Failures throw
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
  // Every block's Snapshot (STAGE, then FETCH_STAGED), issued together like a pull (not
  // counted as training traffic).
  void stageSnapshot() override;
  core::ServerSnapshot fetchStagedSnapshot() override;
  int64_t bytesSent() const override { return bytesSent_.load(); }
  int64_t bytesReceived() const override { return bytesReceived_.load(); }

 private:
  struct Shard;
  core::BoardState report(const core::WorkerReport& report);
  // Sends every block its values (init: epoch 0, retrying a shard that has not accepted the
  // job yet; reset: epoch > 0).
  void sendValues(const float* params, int64_t version, int64_t epoch);
  [[noreturn]] void fail(int shard, const char* what, const grpc::Status& status) const;
  [[noreturn]] void failStream(int shard, const char* what, const SocketError& error) const;
  // A share's stream failed: it is opened again before the next call; throws as failStream.
  [[noreturn]] void streamFailed(const std::vector<StreamShare>& shares,
                                 const StreamCallError& error, const char* what);
  // Opens the stream of every shard that should have one and has none (the first call, or
  // after a failure broke it); returns the shares of a pull or push that go over streams.
  std::vector<StreamShare> streamShares();

  std::vector<core::PsBlock> layout_;
  ParameterClientOptions options_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::vector<float> landing_;  // where pulled values arrive from streams
  std::atomic<int64_t> bytesSent_{0};
  std::atomic<int64_t> bytesReceived_{0};
};

}  // namespace dtlab::remote
