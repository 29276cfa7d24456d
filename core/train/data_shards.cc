#include "core/train/data_shards.h"

#include <numeric>

#include "core/data/dataset.h"
#include "core/data/partition.h"

namespace dtlab::core {
namespace {

PartitionConfig partitionConfig(const ExperimentSpec& spec) {
  PartitionConfig config;
  const DataPartitionConfig& wanted = spec.training.dataPartition;
  config.kind = wanted.kind == DataPartitionKind::kDirichlet ? PartitionKind::kDirichlet
                                                             : PartitionKind::kIid;
  config.alpha = wanted.alpha;
  config.seed = spec.seed;
  return config;
}

std::vector<int64_t> wholeSet(const Dataset& dataset) {
  std::vector<int64_t> all(static_cast<std::size_t>(dataset.size(Split::kTrain)));
  std::iota(all.begin(), all.end(), int64_t{0});
  return all;
}

// "dirichlet (alpha 0.3) shards by rank, samples [class counts]: 0: 5123 [910/12/...]; 1: ..."
// Every rank's, not only this one's: the loop records rank 0's start event only, and the skew
// is a property of the whole partition.
std::string dirichletDetail(const ExperimentSpec& spec, const Dataset& dataset,
                            const std::vector<std::vector<int64_t>>& shards) {
  const std::vector<std::vector<int64_t>> counts = classCounts(dataset, shards);
  std::string alpha = std::to_string(spec.training.dataPartition.alpha);
  alpha.erase(alpha.find_last_not_of('0') + 1);
  if (alpha.back() == '.') alpha.pop_back();
  std::string out = "dirichlet (alpha " + alpha + ") shards by rank, samples [class counts]: ";
  for (std::size_t r = 0; r < shards.size(); ++r) {
    if (r > 0) out += "; ";
    out += std::to_string(r) + ": " + std::to_string(shards[r].size()) + " [";
    for (std::size_t c = 0; c < counts[r].size(); ++c) {
      if (c > 0) out += '/';
      out += std::to_string(counts[r][c]);
    }
    out += ']';
  }
  return out;
}

}  // namespace

std::vector<int64_t> workerSamples(const ExperimentSpec& spec, const Dataset& dataset, int rank,
                                   int world) {
  if (spec.training.dataPartition.kind == DataPartitionKind::kShared) return wholeSet(dataset);
  std::vector<std::vector<int64_t>> shards = partitionTrain(dataset, world, partitionConfig(spec));
  return std::move(shards.at(static_cast<std::size_t>(rank)));
}

WorkerData workerData(const ExperimentSpec& spec, const Dataset& dataset, int rank, int world,
                      SharedDraw shared) {
  const BatchSlice share = BatchSlice::equal(spec.training.batchSize, rank, world);
  WorkerData out;
  const DataPartitionKind kind = spec.training.dataPartition.kind;
  if (kind == DataPartitionKind::kShared && shared == SharedDraw::kGlobalBatchSlices) {
    out.samples = wholeSet(dataset);
    out.slice = share;
    return out;
  }
  out.slice = BatchSlice::whole(share.count);
  if (kind == DataPartitionKind::kShared) {
    // Each worker draws from its own contiguous part of the training set (the samples are
    // i.i.d. draws of the generator, so a range is as good as a shuffled subset, and a range
    // costs no index memory); one worker draws from all of it, like a single learner.
    const int64_t n = dataset.size(Split::kTrain);
    const int64_t begin = n * rank / world;
    const int64_t end = n * (rank + 1) / world;
    if (end - begin < share.count)
      throw Error("rank " + std::to_string(rank) + "'s part of the training set (" +
                  std::to_string(end - begin) + " samples) is smaller than its batch of " +
                  std::to_string(share.count));
    out.samples.resize(static_cast<std::size_t>(end - begin));
    std::iota(out.samples.begin(), out.samples.end(), begin);
    return out;
  }

  std::vector<std::vector<int64_t>> shards = partitionTrain(dataset, world, partitionConfig(spec));
  out.detail = kind == DataPartitionKind::kDirichlet
                   ? dirichletDetail(spec, dataset, shards)
                   : "own iid shard of " +
                         std::to_string(shards[static_cast<std::size_t>(rank)].size()) + " samples";
  out.samples = std::move(shards[static_cast<std::size_t>(rank)]);
  const auto shardSize = static_cast<int64_t>(out.samples.size());
  if (shardSize < share.count) {
    // Whole copies, so every sample of the shard stays equally frequent.
    const int64_t copies = (share.count + shardSize - 1) / shardSize;
    const std::vector<int64_t> shard = out.samples;
    for (int64_t c = 1; c < copies; ++c)
      out.samples.insert(out.samples.end(), shard.begin(), shard.end());
    out.detail += "; rank " + std::to_string(rank) + "'s shard of " + std::to_string(shardSize) +
                  " samples is repeated " + std::to_string(copies) +
                  " times to fill its batch of " + std::to_string(share.count);
  }
  return out;
}

}  // namespace dtlab::core
