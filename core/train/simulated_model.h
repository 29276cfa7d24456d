#pragma once
// The scale simulator's picture of a spec's model (core/sim/cluster_model.h: ModelShape): its
// parameters' bytes, and its gradient buckets as a synchronous run lays them out
// (planBuckets over the model's hand-offs in backward order, the votes' control block riding
// in the first), each ready at the share of a step's compute at which backward hands over its
// last block. Those shares are measured (measureHandOffShares: the model's own forward and
// backward, timed); without a measurement, backward is taken as two thirds of a step and each
// layer's part of it as proportional to its parameters.
#include <cstdint>
#include <vector>

#include "core/sim/cluster_model.h"
#include "core/spec/experiment_spec.h"

namespace dtlab::core {

// `bucketBytes` <= 0: the default of a group that measured nothing (GradientBucketsOptions).
// `handOffShares`: per hand-off of the model (Model::handOffs order), the share of forward and
// backward done when it is handed over; empty: the parameter-share estimate.
sim::ModelShape simulatedModel(const ExperimentSpec& spec, int64_t bucketBytes,
                               const std::vector<double>& handOffShares = {});

// Times the spec's model on this machine (one CPU thread, `rows` samples a step, the median of
// a few steps after a warm-up): per hand-off, the share of forward and backward done when
// backward hands it over, increasing to 1.
std::vector<double> measureHandOffShares(const ExperimentSpec& spec, int64_t rows);

}  // namespace dtlab::core
