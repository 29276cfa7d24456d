#pragma once

#include <memory>
#include <vector>

#include "core/backend/backend.h"
#include "core/train/parameter_server.h"

namespace dtlab::core {

// A parameter client for a worker whose parameters and gradients live in a backend's memory
// that is not the host's (a GPU): the server's blocks are host memory, so this client keeps a
// host mirror of the parameters it last moved and stages every call through it. A pull fills
// the mirror from the server (measuring the divergence against it, as the host path measures
// against the replica) and copies it to the device; a push copies the gradient to the host
// first; init and reset copy the given parameters to the mirror. The mirror stands for the
// device buffer that pulls go to, so a pull into it is as correct as the host path's.
class StagedParameterClient final : public ParameterClient {
 public:
  // `inner` and `backend` must outlive this client; parameterCount: the model's.
  StagedParameterClient(ParameterClient& inner, Backend& backend, int64_t parameterCount);

  const std::vector<PsBlock>& layout() const override { return inner_.layout(); }
  void init(const float* params) override;
  void reset(const float* params, int64_t version, int64_t epoch) override;
  double waitForClock(int64_t clock) override { return inner_.waitForClock(clock); }
  PullOutcome pull(float* params, std::vector<int64_t>& versions) override;
  PushOutcome push(const float* grads, const std::vector<int64_t>& basedOn,
                   const WorkerReport& report) override;
  BoardState agree(const WorkerReport& report) override { return inner_.agree(report); }
  void leave(int worker) override { inner_.leave(worker); }
  void stageSnapshot() override { inner_.stageSnapshot(); }
  ServerSnapshot fetchStagedSnapshot() override { return inner_.fetchStagedSnapshot(); }
  int64_t bytesSent() const override { return inner_.bytesSent(); }
  int64_t bytesReceived() const override { return inner_.bytesReceived(); }
  void setEncodings(PsEncoding push, PsEncoding pull) override { inner_.setEncodings(push, pull); }

 private:
  ParameterClient& inner_;
  Backend& backend_;
  std::vector<float> params_;  // host mirror of the parameters last moved
  std::vector<float> grads_;   // host copy of the gradient being pushed
};

}  // namespace dtlab::core
