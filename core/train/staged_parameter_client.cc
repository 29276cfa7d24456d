#include "core/train/staged_parameter_client.h"

namespace dtlab::core {

StagedParameterClient::StagedParameterClient(ParameterClient& inner, Backend& backend,
                                             int64_t parameterCount)
    : inner_(inner),
      backend_(backend),
      params_(static_cast<std::size_t>(parameterCount)),
      grads_(static_cast<std::size_t>(parameterCount)) {}

void StagedParameterClient::init(const float* params) {
  backend_.download(params_.data(), params, static_cast<int64_t>(params_.size()));
  inner_.init(params_.data());
}

void StagedParameterClient::reset(const float* params, int64_t version, int64_t epoch) {
  backend_.download(params_.data(), params, static_cast<int64_t>(params_.size()));
  inner_.reset(params_.data(), version, epoch);
}

PullOutcome StagedParameterClient::pull(float* params, std::vector<int64_t>& versions) {
  const PullOutcome outcome = inner_.pull(params_.data(), versions);
  backend_.upload(params, params_.data(), static_cast<int64_t>(params_.size()));
  return outcome;
}

PushOutcome StagedParameterClient::push(const float* grads, const std::vector<int64_t>& basedOn,
                                        const WorkerReport& report) {
  backend_.download(grads_.data(), grads, static_cast<int64_t>(grads_.size()));
  return inner_.push(grads_.data(), basedOn, report);
}

}  // namespace dtlab::core
