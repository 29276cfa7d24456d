#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/train/strategy.h"

namespace dtlab::core {

// One trainable strategy kind and how to build it for one rank.
struct StrategyInfo {
  StrategyKind kind;
  std::unique_ptr<Strategy> (*make)(StrategyContext& context);
};

// Every strategy this build can run, in the order they were added. Node daemons advertise
// these names as capabilities; the coordinator checks a variant's kind against them.
const std::vector<StrategyInfo>& strategyRegistry();
// toString(kind) of every registered strategy.
std::vector<std::string> registeredStrategyNames();
// Builds the variant's strategy; throws dtlab::Error when its kind is not registered.
std::unique_ptr<Strategy> makeStrategy(StrategyContext& context);

}  // namespace dtlab::core
