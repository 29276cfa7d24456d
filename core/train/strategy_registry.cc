#include "core/train/strategy_registry.h"

#include "core/train/async_ps.h"
#include "core/train/hybrid.h"
#include "core/train/local_sgd.h"
#include "core/train/sync_allreduce.h"

namespace dtlab::core {

const std::vector<StrategyInfo>& strategyRegistry() {
  static const std::vector<StrategyInfo> registry = {
      {StrategyKind::kSyncAllReduce,
       [](StrategyContext& c) -> std::unique_ptr<Strategy> {
         return std::make_unique<SyncAllReduce>(c);
       }},
      {StrategyKind::kAsyncPs,
       [](StrategyContext& c) -> std::unique_ptr<Strategy> {
         return std::make_unique<AsyncPs>(c);
       }},
      {StrategyKind::kSsp,
       [](StrategyContext& c) -> std::unique_ptr<Strategy> {
         return std::make_unique<AsyncPs>(c);
       }},
      {StrategyKind::kLocalSgd,
       [](StrategyContext& c) -> std::unique_ptr<Strategy> {
         return std::make_unique<LocalSgd>(c);
       }},
      {StrategyKind::kHybrid,
       [](StrategyContext& c) -> std::unique_ptr<Strategy> { return std::make_unique<Hybrid>(c); }},
  };
  return registry;
}

std::vector<std::string> registeredStrategyNames() {
  std::vector<std::string> names;
  for (const StrategyInfo& info : strategyRegistry()) names.emplace_back(toString(info.kind));
  return names;
}

std::unique_ptr<Strategy> makeStrategy(StrategyContext& context) {
  const StrategyKind kind = context.job.spec.variants.at(context.job.variant).strategy;
  for (const StrategyInfo& info : strategyRegistry())
    if (info.kind == kind) return info.make(context);
  throw Error(std::string("strategy '") + toString(kind) + "' is not available in this build");
}

}  // namespace dtlab::core
