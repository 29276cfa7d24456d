#pragma once

#include <cstdint>
#include <vector>

#include "core/data/dataset.h"

namespace dtlab::core {

enum class PartitionKind {
  kIid,        // a seeded permutation cut into near-equal pieces
  kDirichlet,  // label skew: each class spread over workers by Dir(alpha) proportions
  kUnequal,    // as kIid, but piece sizes proportional to weights
};

struct PartitionConfig {
  PartitionKind kind = PartitionKind::kIid;
  double alpha = 0.5;           // kDirichlet concentration; smaller is more skewed
  std::vector<double> weights;  // kUnequal: relative shard sizes, one per worker, each > 0
  uint64_t seed = 0;
};

// The training-sample indices each of `workers` workers owns: together the shards are a
// partition of [0, dataset.size(kTrain)), and within a shard the indices are in a
// seeded shuffled order. Deterministic in (dataset, workers, config), so every worker
// computes the same partition on its own and keeps only its shard.
//
// kIid shards differ in size by at most one. kUnequal sizes are n * w_k / sum(w),
// rounded by largest remainder so that they sum to n exactly. kDirichlet needs a
// classification dataset; when there are at least `workers` samples it moves single
// samples from the largest shards to any that came out empty, so every worker has data.
//
// Throws dtlab::Error for workers < 1, alpha <= 0 (kDirichlet), or a weights list that
// does not have one positive finite entry per worker (kUnequal).
std::vector<std::vector<int64_t>> partitionTrain(const Dataset& dataset, int workers,
                                                 const PartitionConfig& config);

// Per-shard class counts, workers x classes (classification datasets only).
std::vector<std::vector<int64_t>> classCounts(const Dataset& dataset,
                                              const std::vector<std::vector<int64_t>>& shards);

const char* toString(PartitionKind kind);

}  // namespace dtlab::core
