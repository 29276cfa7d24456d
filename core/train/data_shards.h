#pragma once
// Which training samples a worker draws its batches from, under the spec's
// training.data_partition. The one place the strategies ask (the setUp of sync_allreduce,
// local_sgd and async_ps/ssp), so that every strategy of an experiment trains on the same data.
//
// "shared" (the default) keeps what each strategy did before the field existed: synchronous
// ranks take their slice of every global batch drawn from the whole set, asynchronous workers
// draw from a contiguous range each. "iid" and "dirichlet" give every worker its own shard
// (partitionTrain with the run's seed over the run's workers, core/data/partition.h) and it
// draws every batch from that shard alone. What that means for a run:
//
// - Batch: each worker draws its equal share of training.batch_size per step, as under
//   "shared", so a step still trains on batch_size samples and sync_allreduce still averages
//   one global batch's gradient. That batch is stratified by worker: each shard contributes
//   the same number of samples per step whatever its size, so over a run a sample of a small
//   shard is visited more often than one of a large shard (the usual federated setting where
//   every client takes part in every round).
// - Epochs: the run's budget stays epochs x (train_size / batch_size) steps of the whole
//   cluster, the same number of samples as under "shared", so partitions compare on equal
//   work. A worker cycles its own shard as often as that takes (Worker::epoch() counts its
//   passes): more than `epochs` times for a shard below train_size / workers, fewer above.
// - local_sgd's FedAvg weights each worker by the samples it trained on since the last
//   average. Those are equal batch shares here, so the average is unweighted even when the
//   Dirichlet shards differ in size: classic FedAvg weights by shard size because its clients
//   run a local epoch each, of different lengths, whereas these workers take the same steps.
// - A shard smaller than its worker's batch (extreme skew, tiny datasets) is repeated until it
//   fills one, so that worker trains on its few samples rather than failing the run.
// - Memory: a worker that draws whole batches from its own samples materialises them once
//   (Worker's single-replica case): shard rows x (features + targets) floats, about train_size /
//   workers rows on average under "iid", up to most of the set for a Dirichlet shard that
//   took most classes; the cluster's total stays one training set.

#include <cstdint>
#include <string>
#include <vector>

#include "core/spec/experiment_spec.h"
#include "core/train/worker.h"

namespace dtlab::core {

class Dataset;

// How a strategy draws from the whole training set under "shared".
enum class SharedDraw {
  kGlobalBatchSlices,  // sync_allreduce, local_sgd: a slice of every global batch
  kContiguousRanges,   // async_ps, ssp: whole batches of the worker's share from its own range
};

// What a strategy builds its Worker from.
struct WorkerData {
  std::vector<int64_t> samples;  // the training-sample indices its batches are drawn from
  BatchSlice slice;              // its part of every batch it draws
  // For the "start" event: the partition, and for "dirichlet" every rank's shard size and
  // class counts, so a user sees the skew ("shard 2048 samples, classes 910/12/..."). Empty
  // under "shared".
  std::string detail;
};

// Rank `rank` of `world` workers. Throws dtlab::Error when the rank's data cannot fill its
// batch under "shared" (an asynchronous range smaller than its batch).
WorkerData workerData(const ExperimentSpec& spec, const Dataset& dataset, int rank, int world,
                      SharedDraw shared);

// The rank's own shard under "iid" / "dirichlet" (disjoint from the other ranks', together the
// whole training set, in a seeded order); the whole training set under "shared".
std::vector<int64_t> workerSamples(const ExperimentSpec& spec, const Dataset& dataset, int rank,
                                   int world);

}  // namespace dtlab::core
