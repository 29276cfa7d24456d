#pragma once
// A strategy that exists only in the test binaries that include this header: registered with
// core::registerStrategy, it must be accepted by the spec's parser and writer, trained by the
// shared training loop and shown by the GUI's variants table with no change anywhere else
// (issue 18: adding a strategy is its class plus one registry entry).
//
// "test_mixing": every rank trains its own slice of each global batch on its own replica (no
// gradient exchange), and every `every` steps the replicas are mixed: averaged ("mode":
// "average"), or all take rank `root`'s weights ("mode": "broadcast"; `root` applies only to
// that mode). The votes are summed every step, so the ranks stop together.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/comm/communicator.h"
#include "core/nn/model.h"
#include "core/train/data_shards.h"
#include "core/train/strategy.h"
#include "core/train/strategy_registry.h"
#include "core/train/worker.h"

namespace dtlab::core::test {

inline constexpr const char* kDummyStrategy = "test_mixing";

class MixingStrategy final : public Strategy {
 public:
  MixingStrategy(StrategyContext& context, int64_t every, bool average, int64_t root)
      : context_(context),
        every_(every),
        average_(average),
        root_(root),
        global_(context.job.spec.training.batchSize) {}

  std::string setUp() override {
    const WorkerJob& job = context_.job;
    if (root_ >= job.world)
      throw Error("test_mixing root " + std::to_string(root_) + " is not a rank of " +
                  std::to_string(job.world));
    slice_ = BatchSlice::equal(global_, job.rank, job.world);
    WorkerData data =
        workerData(job.spec, context_.dataset, job.rank, job.world, SharedDraw::kGlobalBatchSlices);
    worker_ =
        std::make_unique<Worker>(job.spec, context_.backend, context_.dataset,
                                 std::move(data.samples), data.slice, context_.totalSteps, global_);
    Model& model = worker_->model();
    if (context_.comm != nullptr)
      context_.comm->broadcast(model.params(), model.parameterCount(), 0);
    return std::string("test_mixing: ") + (average_ ? "average" : "broadcast") + " every " +
           std::to_string(every_) + " steps";
  }

  StepReport step(int64_t step, const Votes& local, Votes& agreed) override {
    worker_->loadBatch();
    StepReport r;
    r.loss = worker_->computeGradients(1.0f / static_cast<float>(slice_.count));
    worker_->applyUpdate(step);
    r.samples = slice_.count;
    r.batchShare = static_cast<double>(slice_.count) / static_cast<double>(global_);
    if (context_.comm != nullptr && step % every_ == 0) mix();
    agreed = agree(local);
    r.votesAgreed = true;
    return r;
  }

  Votes agree(const Votes& local) override {
    Votes sum = local;
    if (context_.comm != nullptr) context_.comm->allReduceSum(sum.values.data(), Votes::kCount);
    return sum;
  }
  Worker& replica() override { return *worker_; }
  bool evaluates() const override { return context_.job.rank == 0; }
  int64_t globalBatch() const override { return global_; }

 private:
  void mix() {
    Model& model = worker_->model();
    const int64_t count = model.parameterCount();
    if (!average_) {
      context_.comm->broadcast(model.params(), count, static_cast<int>(root_));
    } else {
      std::vector<float> host(static_cast<std::size_t>(count));
      worker_->backend().download(host.data(), model.params(), count);
      context_.comm->allReduceSum(host.data(), count);
      const float scale = 1.0f / static_cast<float>(context_.job.world);
      for (float& x : host) x *= scale;
      worker_->backend().upload(model.params(), host.data(), count);
    }
  }

  StrategyContext& context_;
  int64_t every_;
  bool average_;
  int64_t root_;
  int64_t global_;
  BatchSlice slice_;
  std::unique_ptr<Worker> worker_;
};

inline StrategyDescriptor mixingDescriptor() {
  StrategyDescriptor d;
  d.name = kDummyStrategy;
  d.summary = "Test only: local training, replicas mixed every few steps";
  const SettingSchema every{.key = "every",
                            .label = "Mix\nevery",
                            .help = "Steps between two mixes of the replicas",
                            .defaultValue = int64_t{4},
                            .min = 1,
                            .max = 1000};
  const SettingSchema mode{.key = "mode",
                           .type = SettingType::kChoice,
                           .label = "Mode",
                           .help = "average: the replicas' mean; broadcast: one rank's weights",
                           .defaultValue = std::string("average"),
                           .choices = {"average", "broadcast"}};
  const SettingSchema root{.key = "root",
                           .label = "Root",
                           .help = "The rank whose weights a broadcast spreads",
                           .defaultValue = int64_t{0},
                           .min = 0,
                           .max = 255,
                           .when = SettingCondition{"mode", {"broadcast"}}};
  d.settings = {every, mode, root};
  d.check = [](const VariantConfig& v, const VariantCheckContext& at) {
    const int64_t rootRank = strategyOf(v).view(v).integer("root");
    if (rootRank >= at.runNodes)
      throw SpecError(at.path + ".root",
                      "must be a rank of the variant's " + std::to_string(at.runNodes) + " nodes");
  };
  d.make = [](StrategyContext& c) -> std::unique_ptr<Strategy> {
    const VariantConfig& v = c.job.spec.variants.at(static_cast<std::size_t>(c.job.variant));
    const SettingsView s = strategyOf(v).view(v);
    return std::make_unique<MixingStrategy>(c, s.integer("every"), s.choice("mode") == "average",
                                            s.integer("root"));
  };
  return d;
}

// The one registry entry; once per process.
inline void registerDummyStrategy() {
  if (findStrategy(kDummyStrategy) == nullptr) registerStrategy(mixingDescriptor());
}

}  // namespace dtlab::core::test
