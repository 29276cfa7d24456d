#include "core/train/simulated_model.h"

#include <algorithm>

#include "core/backend/cpu_backend.h"
#include "core/comm/gradient_buckets.h"
#include "core/data/dataset_kinds.h"
#include "core/nn/mlp.h"

namespace dtlab::core {

sim::ModelShape simulatedModel(const ExperimentSpec& spec, int64_t bucketBytes) {
  if (bucketBytes <= 0) bucketBytes = GradientBucketsOptions{}.bucketBytes;
  const DatasetKindDescriptor& kind = datasetKindOf(spec.dataset);
  const int64_t outputs = kind.task == TaskKind::kRegression ? 1 : spec.dataset.classes;
  CpuBackend backend(1);
  const Mlp model(backend, spec.dataset.features, mlpLayers(spec.model, outputs));
  const int64_t params = model.parameterCount();
  const int64_t control = Mlp::kControlSlots;

  std::vector<GradientRange> blocks = {{params, params + control}};
  blocks.insert(blocks.end(), model.handOffs().begin(), model.handOffs().end());
  sim::ModelShape shape;
  shape.parameterBytes = static_cast<double>(params * static_cast<int64_t>(sizeof(float)));
  int64_t handed = 0;  // parameters whose gradients are final, control block aside
  for (const GradientRange& bucket : planBuckets(blocks, bucketBytes)) {
    const int64_t controlIn = std::max<int64_t>(
        0, std::min(bucket.end, params + control) - std::max(bucket.begin, params));
    handed += bucket.size() - controlIn;
    shape.bucketBytes.push_back(static_cast<double>(bucket.size() * int64_t{sizeof(float)}));
    shape.bucketReady.push_back(
        params > 0 ? static_cast<double>(handed) / static_cast<double>(params) : 1.0);
  }
  return shape;
}

}  // namespace dtlab::core
