#include "core/data/partition.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <span>
#include <string>
#include <utility>

#include "core/common/check.h"
#include "core/common/random.h"

namespace dtlab::core {
namespace {

// First elements of the deriveSeed paths of the partition's random choices.
constexpr uint64_t kPermutationStream = 0x5045524D'55544531ull;
constexpr uint64_t kClassOrderStream = 0x434C4153'534F5244ull;
constexpr uint64_t kProportionStream = 0x44495249'43484C54ull;
constexpr uint64_t kShardOrderStream = 0x53484152'444F5244ull;

using Shards = std::vector<std::vector<int64_t>>;

void shuffle(std::vector<int64_t>& values, Rng& rng) {
  for (std::size_t i = values.size(); i > 1; --i) {
    const auto j = static_cast<std::size_t>(rng.below(i));
    std::swap(values[i - 1], values[j]);
  }
}

// Splits n into parts proportional to shares (non-negative, positive sum) that sum to n
// exactly: floors of the exact parts, then one more to the largest remainders, ties to
// the lower index.
std::vector<int64_t> largestRemainder(int64_t n, std::span<const double> shares) {
  const double total = std::accumulate(shares.begin(), shares.end(), 0.0);
  const std::size_t k = shares.size();
  std::vector<int64_t> parts(k);
  std::vector<double> remainders(k);
  int64_t assigned = 0;
  for (std::size_t i = 0; i < k; ++i) {
    const double exact = static_cast<double>(n) * (shares[i] / total);
    parts[i] = std::min(n, static_cast<int64_t>(std::floor(exact)));
    remainders[i] = exact - static_cast<double>(parts[i]);
    assigned += parts[i];
  }
  std::vector<std::size_t> order(k);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return remainders[a] > remainders[b]; });
  // Rounding in `exact` can leave the floors one or two off in either direction; the
  // loops below settle the sum whatever the amount.
  for (std::size_t r = 0; assigned < n; r = (r + 1) % k) {
    ++parts[order[r]];
    ++assigned;
  }
  for (std::size_t r = k; assigned > n;) {
    r = r == 0 ? k - 1 : r - 1;
    if (parts[order[r]] > 0) {
      --parts[order[r]];
      --assigned;
    }
  }
  return parts;
}

Shards splitPermutation(int64_t n, std::span<const int64_t> sizes, uint64_t seed) {
  std::vector<int64_t> permutation(static_cast<std::size_t>(n));
  std::iota(permutation.begin(), permutation.end(), int64_t{0});
  Rng rng(deriveSeed(seed, kPermutationStream));
  shuffle(permutation, rng);
  Shards shards(sizes.size());
  auto next = permutation.begin();
  for (std::size_t w = 0; w < sizes.size(); ++w) {
    shards[w].assign(next, next + sizes[w]);
    next += sizes[w];
  }
  return shards;
}

std::vector<int64_t> trainLabels(const Dataset& dataset) {
  std::vector<int64_t> labels(static_cast<std::size_t>(dataset.size(Split::kTrain)));
  dataset.labels(Split::kTrain, 0, static_cast<int64_t>(labels.size()), labels.data());
  return labels;
}

Shards dirichletPartition(const Dataset& dataset, int workers, double alpha, uint64_t seed) {
  const int64_t classes = dataset.outputs();
  const std::vector<int64_t> labels = trainLabels(dataset);
  Shards byClass(static_cast<std::size_t>(classes));
  for (std::size_t i = 0; i < labels.size(); ++i)
    byClass[labels[i]].push_back(static_cast<int64_t>(i));

  // cells[w][c]: the samples of class c that worker w owns.
  std::vector<Shards> cells(static_cast<std::size_t>(workers),
                            Shards(static_cast<std::size_t>(classes)));
  std::vector<int64_t> shardSize(static_cast<std::size_t>(workers), 0);
  std::vector<double> proportions(static_cast<std::size_t>(workers));
  for (int64_t c = 0; c < classes; ++c) {
    std::vector<int64_t>& members = byClass[c];
    Rng orderRng(deriveSeed(seed, kClassOrderStream, static_cast<uint64_t>(c)));
    shuffle(members, orderRng);
    Rng rng(deriveSeed(seed, kProportionStream, static_cast<uint64_t>(c)));
    double total = 0.0;
    for (double& p : proportions) {
      p = rng.gamma(alpha);
      total += p;
    }
    // Tiny alpha can underflow every gamma draw to 0; the limit of Dir(alpha) as alpha
    // goes to 0 puts the whole class on one worker, so do that.
    if (!(total > 0.0) || !std::isfinite(total)) {
      std::fill(proportions.begin(), proportions.end(), 0.0);
      proportions[rng.below(static_cast<uint64_t>(workers))] = 1.0;
    }
    const std::vector<int64_t> counts =
        largestRemainder(static_cast<int64_t>(members.size()), proportions);
    auto next = members.begin();
    for (int w = 0; w < workers; ++w) {
      cells[w][c].assign(next, next + counts[w]);
      next += counts[w];
      shardSize[w] += counts[w];
    }
  }

  // An empty shard would leave its worker idle (and divide by zero in the weighting of
  // FedAvg-style strategies), so each empty worker takes one sample from the currently
  // largest shard, out of that shard's most common class. With n >= workers the largest
  // shard always has two or more samples to spare one.
  const auto n = static_cast<int64_t>(labels.size());
  if (n >= workers) {
    for (int w = 0; w < workers; ++w) {
      if (shardSize[w] > 0) continue;
      const auto donor = static_cast<std::size_t>(
          std::max_element(shardSize.begin(), shardSize.end()) - shardSize.begin());
      Shards& donorCells = cells[donor];
      const auto c = static_cast<std::size_t>(
          std::max_element(donorCells.begin(), donorCells.end(),
                           [](const auto& a, const auto& b) { return a.size() < b.size(); }) -
          donorCells.begin());
      cells[w][c].push_back(donorCells[c].back());
      donorCells[c].pop_back();
      --shardSize[donor];
      ++shardSize[w];
    }
  }

  Shards shards(static_cast<std::size_t>(workers));
  for (int w = 0; w < workers; ++w) {
    shards[w].reserve(static_cast<std::size_t>(shardSize[w]));
    for (const auto& cell : cells[w]) shards[w].insert(shards[w].end(), cell.begin(), cell.end());
    Rng rng(deriveSeed(seed, kShardOrderStream, static_cast<uint64_t>(w)));
    shuffle(shards[w], rng);
  }
  return shards;
}

}  // namespace

Shards partitionTrain(const Dataset& dataset, int workers, const PartitionConfig& config) {
  if (workers < 1) {
    throw Error(
        ::dtlab::detail::concat("partition: workers must be at least 1 (got ", workers, ")"));
  }
  const int64_t n = dataset.size(Split::kTrain);
  switch (config.kind) {
    case PartitionKind::kIid: {
      std::vector<int64_t> sizes(static_cast<std::size_t>(workers), n / workers);
      for (int64_t w = 0; w < n % workers; ++w) ++sizes[w];
      return splitPermutation(n, sizes, config.seed);
    }
    case PartitionKind::kUnequal: {
      if (config.weights.size() != static_cast<std::size_t>(workers)) {
        throw Error(::dtlab::detail::concat(
            "partition: unequal needs one weight per worker: ", config.weights.size(),
            " weights for ", workers, " workers"));
      }
      for (std::size_t w = 0; w < config.weights.size(); ++w) {
        const double weight = config.weights[w];
        if (!std::isfinite(weight) || !(weight > 0.0)) {
          throw Error(::dtlab::detail::concat("partition: weights[", w,
                                              "] must be positive and finite (got ", weight, ")"));
        }
      }
      // Normalising first keeps the sum finite for weights near the double range's top.
      const double largest = *std::max_element(config.weights.begin(), config.weights.end());
      std::vector<double> shares(config.weights.size());
      for (std::size_t w = 0; w < shares.size(); ++w) shares[w] = config.weights[w] / largest;
      return splitPermutation(n, largestRemainder(n, shares), config.seed);
    }
    case PartitionKind::kDirichlet:
      if (!std::isfinite(config.alpha) || !(config.alpha > 0.0)) {
        throw Error(::dtlab::detail::concat(
            "partition: dirichlet alpha must be positive and finite (got ", config.alpha, ")"));
      }
      if (dataset.task() != TaskKind::kClassification) {
        throw Error("partition: dirichlet skews labels, so it needs a classification dataset");
      }
      return dirichletPartition(dataset, workers, config.alpha, config.seed);
  }
  throw Error(::dtlab::detail::concat("partition: unknown kind ", static_cast<int>(config.kind)));
}

Shards classCounts(const Dataset& dataset, const Shards& shards) {
  if (dataset.task() != TaskKind::kClassification) {
    throw Error("class counts need a classification dataset");
  }
  const std::vector<int64_t> labels = trainLabels(dataset);
  Shards counts(shards.size(),
                std::vector<int64_t>(static_cast<std::size_t>(dataset.outputs()), 0));
  for (std::size_t w = 0; w < shards.size(); ++w) {
    for (int64_t i : shards[w]) {
      if (i < 0 || i >= static_cast<int64_t>(labels.size())) {
        throw Error(::dtlab::detail::concat("class counts: shard ", w, " holds sample ", i,
                                            ", outside the train split of ", labels.size()));
      }
      ++counts[w][labels[i]];
    }
  }
  return counts;
}

const char* toString(PartitionKind kind) {
  switch (kind) {
    case PartitionKind::kIid:
      return "iid";
    case PartitionKind::kDirichlet:
      return "dirichlet";
    case PartitionKind::kUnequal:
      return "unequal";
  }
  return "unknown";
}

}  // namespace dtlab::core
