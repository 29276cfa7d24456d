#include "core/spec/execution_plan.h"

#include "core/common/random.h"

namespace dtlab::core {
namespace {

// Separates repetition seeds from every other stream derived from a spec's seed.
constexpr uint64_t kRepetitionStream = 0x5245504541545331ull;  // "REPEATS1"

}  // namespace

uint64_t repetitionSeed(uint64_t experimentSeed, int repetition) {
  if (repetition == 0) return experimentSeed;
  return deriveSeed(experimentSeed, kRepetitionStream, static_cast<uint64_t>(repetition));
}

std::string runNameOf(const ExperimentSpec& spec, int variant) {
  return spec.name + "/" + spec.variants.at(static_cast<std::size_t>(variant)).name;
}

std::vector<PlannedRun> executionPlan(const ExperimentSpec& spec) {
  std::vector<PlannedRun> plan;
  const int repeats = static_cast<int>(spec.repeats);
  const int variants = static_cast<int>(spec.variants.size());
  plan.reserve(static_cast<std::size_t>(repeats) * static_cast<std::size_t>(variants));
  for (int r = 0; r < repeats; ++r) {
    for (int v = 0; v < variants; ++v) {
      PlannedRun run;
      run.variant = v;
      run.repetition = r;
      run.spec = spec;
      run.spec.seed = repetitionSeed(spec.seed, r);
      run.name = runNameOf(spec, v);
      plan.push_back(std::move(run));
    }
  }
  return plan;
}

}  // namespace dtlab::core
