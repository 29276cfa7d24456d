#pragma once
// The scale simulator's picture of a spec's model (core/sim/cluster_model.h: ModelShape): its
// parameters' bytes, and its gradient buckets as a synchronous run lays them out
// (planBuckets over the model's hand-offs in backward order, the votes' control block riding
// in the first), each ready once backward has done the share of its work that precedes it.
// An MLP layer's backward work (its weight and input gradients) is taken proportional to its
// parameters.
#include <cstdint>

#include "core/sim/cluster_model.h"
#include "core/spec/experiment_spec.h"

namespace dtlab::core {

// `bucketBytes` <= 0: the default of a group that measured nothing (GradientBucketsOptions).
sim::ModelShape simulatedModel(const ExperimentSpec& spec, int64_t bucketBytes);

}  // namespace dtlab::core
