// The strategies this build comes with, in the order the spec and the GUI list them; the first is
// the default. Kept apart from the registry, which every strategy's own file may include, so that
// the registry includes no strategy.
#include "core/train/async_ps.h"
#include "core/train/hybrid.h"
#include "core/train/local_sgd.h"
#include "core/train/strategy_registry.h"
#include "core/train/sync_allreduce.h"

namespace dtlab::core {

std::vector<StrategyDescriptor> builtinStrategies() {
  return {syncAllReduceDescriptor(), asyncPsDescriptor(), sspDescriptor(), localSgdDescriptor(),
          hybridDescriptor()};
}

}  // namespace dtlab::core
