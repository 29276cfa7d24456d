#include "core/spec/data_partition_checks.h"

#include <nlohmann/json.hpp>

namespace dtlab::core {

void checkDataPartition(const DataPartitionConfig& partition, const DatasetConfig& dataset,
                        const std::string& path) {
  // linear_regression is the one kind without classes (experiment_spec.cc's kind traits).
  if (partition.kind == DataPartitionKind::kDirichlet &&
      dataset.kind == DatasetKind::kLinearRegression)
    throw SpecError(path,
                    "\"dirichlet\" skews the labels each worker sees, so it needs a classification "
                    "dataset; dataset.kind is \"linear_regression\" (use \"iid\" or \"shared\")");
}

void checkVariantsTakeDataPartition(const ExperimentSpec& spec, const std::string& variantsPath) {
  const DataPartitionKind kind = spec.training.dataPartition.kind;
  if (kind == DataPartitionKind::kShared) return;
  const std::string given = std::string("training.data_partition is \"") + toString(kind) + "\"";
  for (std::size_t i = 0; i < spec.variants.size(); ++i) {
    const VariantConfig& v = spec.variants[i];
    const std::string at = variantsPath + "[" + std::to_string(i) + "]";
    if (v.partition == PartitionScheme::kSpeedProportional)
      throw SpecError(at + ".partition",
                      "\"speed_proportional\" gives each worker a slice of every global batch "
                      "drawn from the whole training set, so it needs training.data_partition "
                      "\"shared\"; " +
                          given + ", where each worker draws only from its own shard");
  }
}

nlohmann::json dataPartitionJson(const DataPartitionConfig& partition) {
  nlohmann::json out = {{"kind", toString(partition.kind)}};
  if (partition.kind == DataPartitionKind::kDirichlet) out["alpha"] = partition.alpha;
  return out;
}

}  // namespace dtlab::core
