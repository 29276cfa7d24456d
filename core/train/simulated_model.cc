#include "core/train/simulated_model.h"

#include <algorithm>
#include <chrono>

#include "core/backend/cpu_backend.h"
#include "core/comm/gradient_buckets.h"
#include "core/common/check.h"
#include "core/common/random.h"
#include "core/common/statistics.h"
#include "core/data/dataset_kinds.h"
#include "core/nn/model_kinds.h"

namespace dtlab::core {
namespace {

// Records when each hand-off comes, since the start of the step.
class HandOffClock final : public GradientListener {
 public:
  using Clock = std::chrono::steady_clock;
  void start() {
    times.clear();
    begun = Clock::now();
  }
  void onGradientsReady(int64_t, int64_t) override {
    times.push_back(std::chrono::duration<double>(Clock::now() - begun).count());
  }
  Clock::time_point begun;
  std::vector<double> times;
};

}  // namespace

sim::ModelShape simulatedModel(const ExperimentSpec& spec, int64_t bucketBytes,
                               const std::vector<double>& handOffShares) {
  if (bucketBytes <= 0) bucketBytes = GradientBucketsOptions{}.bucketBytes;
  CpuBackend backend(1);
  const std::unique_ptr<Model> model = makeModel(backend, spec.model, sampleShapeOf(spec.dataset));
  const int64_t params = model->parameterCount();
  const int64_t control = Model::kControlSlots;
  const std::vector<GradientRange>& handOffs = model->handOffs();
  const bool measured = handOffShares.size() == handOffs.size();

  std::vector<GradientRange> blocks = {{params, params + control}};
  blocks.insert(blocks.end(), handOffs.begin(), handOffs.end());
  sim::ModelShape shape;
  shape.parameterBytes = static_cast<double>(params * static_cast<int64_t>(sizeof(float)));
  // Measured: a bucket is ready at its last hand-off's share of the whole compute.
  if (measured) shape.backwardShare = 1.0;
  int64_t handed = 0;  // parameters whose gradients are final, control block aside
  for (const GradientRange& bucket : planBuckets(blocks, bucketBytes)) {
    const int64_t controlIn = std::max<int64_t>(
        0, std::min(bucket.end, params + control) - std::max(bucket.begin, params));
    handed += bucket.size() - controlIn;
    shape.bucketBytes.push_back(static_cast<double>(bucket.size() * int64_t{sizeof(float)}));
    double ready = params > 0 ? static_cast<double>(handed) / static_cast<double>(params) : 1.0;
    if (measured) {
      ready = 0.0;
      for (std::size_t h = 0; h < handOffs.size(); ++h)
        if (handOffs[h].begin >= bucket.begin && handOffs[h].end <= bucket.end)
          ready = std::max(ready, handOffShares[h]);
    }
    shape.bucketReady.push_back(ready);
  }
  return shape;
}

std::vector<double> measureHandOffShares(const ExperimentSpec& spec, int64_t rows) {
  DTLAB_ENFORCE(rows > 0, "a step needs samples");
  CpuBackend backend(1);
  const std::unique_ptr<Model> owned = makeModel(backend, spec.model, sampleShapeOf(spec.dataset));
  Model& model = *owned;
  model.initialize(InitScheme::kHe, spec.seed);
  model.reserve(rows);
  std::vector<float> host(static_cast<std::size_t>(rows * model.inputs()));
  Rng rng(spec.seed);
  for (float& v : host) v = static_cast<float>(rng.uniform()) - 0.5f;
  float* x = backend.allocate(rows * model.inputs());
  backend.upload(x, host.data(), rows * model.inputs());
  const std::size_t count = model.handOffs().size();
  std::vector<std::vector<double>> shares(count);
  HandOffClock clock;
  constexpr int kWarmUp = 2;
  constexpr int kSteps = 7;
  for (int step = 0; step < kWarmUp + kSteps; ++step) {
    clock.start();
    model.forward(x, rows);
    float* dOutput = model.outputGradBuffer();
    backend.fill(dOutput, rows * model.outputs(), 1e-3f);
    model.backward(x, dOutput, rows, &clock);
    if (step < kWarmUp || clock.times.size() != count || !(clock.times.back() > 0.0)) continue;
    for (std::size_t h = 0; h < count; ++h)
      shares[h].push_back(clock.times[h] / clock.times.back());
  }
  backend.release(x);
  std::vector<double> out;
  double last = 0.0;
  for (std::vector<double>& s : shares) {
    last = std::max(last, s.empty() ? 1.0 : median(s));  // increasing, whatever the noise
    out.push_back(last);
  }
  if (!out.empty()) out.back() = 1.0;
  return out;
}

}  // namespace dtlab::core
