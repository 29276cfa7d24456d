#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/spec/experiment_spec.h"

namespace dtlab::core {

// One execution of an experiment: every variant, run
// `repeats` times. Repetition r runs every variant with the seed repetitionSeed(spec.seed, r),
// so within a repetition the variants start from the same weights and see the same data order
// and emulated stragglers (they stay paired), while repetitions differ. The dataset itself
// stays the same: its seed was fixed when the spec was read.
//
// The runs go repetition by repetition (every variant of the first, then of the second, ...):
// a machine whose speed drifts during an execution then moves every variant alike, instead of
// favouring the variants that happened to run first.
struct PlannedRun {
  int variant = 0;      // index into spec.variants
  int repetition = 0;   // 0-based
  ExperimentSpec spec;  // the experiment's spec with the repetition's seed
  std::string name;     // "EXPERIMENT/VARIANT", the run's name in a project
};

// Repetition 0 keeps the experiment's seed (an execution of one repetition runs exactly what
// the spec says); later repetitions derive theirs from it.
uint64_t repetitionSeed(uint64_t experimentSeed, int repetition);

// The runs of one execution of `spec`, in the order they run.
std::vector<PlannedRun> executionPlan(const ExperimentSpec& spec);

// The name `dtlab-cli run` and the GUI give a variant's run: "EXPERIMENT/VARIANT".
std::string runNameOf(const ExperimentSpec& spec, int variant);

}  // namespace dtlab::core
