#include "ui/models/dataset_preview.h"

#include <algorithm>

#include "core/data/dataset.h"
#include "core/data/dataset_kinds.h"
#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "core/tensor/tensor.h"

namespace dtlab::ui {
namespace {

// Counting shard classes reads every training label; beyond this the editor says so instead.
constexpr int64_t kMaxCountedSamples = 500000;
constexpr int64_t kShownSequences = 8;

}  // namespace

DatasetPreview computeDatasetPreview(const nlohmann::json& dataset, int workers,
                                     const core::PartitionConfig& partition, int64_t samples) {
  DatasetPreview p;
  try {
    // The dataset alone: no model has been chosen for it here.
    const core::DatasetConfig config =
        core::parseDatasetSection(dataset, core::ExperimentSpec{}.seed);
    p.config = core::toJson(config);
    const std::unique_ptr<core::Dataset> data = core::makeDataset(config);
    p.classification = data->task() == core::TaskKind::kClassification;
    p.features = data->features();
    p.classes = p.classification ? data->outputs() : 0;
    const int64_t n = std::min(samples, data->size(core::Split::kTest));
    core::Tensor x, y;
    x.resize(n, data->features());
    y.resize(n, data->targets());
    data->generate(core::Split::kTest, 0, n, x.data(), y.data());
    for (int64_t i = 0; i < n; ++i) {
      p.x.push_back(x.row(i)[0]);
      p.y.push_back(data->features() > 1 ? x.row(i)[1] : y.row(i)[0]);
      if (p.classification) {
        p.label.push_back(static_cast<int>(y.row(i)[0]));
      } else {
        p.target.push_back(y.row(i)[0]);
      }
    }
    p.lossFloor = data->lossFloor();
    if (core::datasetKindOf(config).preview == core::DatasetPreviewKind::kTokens) {
      const int64_t shown = std::min<int64_t>(n, kShownSequences);
      for (int64_t i = 0; i < shown; ++i)
        p.sequences.push_back(
            {{x.row(i), x.row(i) + data->features()}, {y.row(i), y.row(i) + data->targets()}});
    }
    const core::SampleShape shape = core::sampleShapeOf(config);
    if (core::datasetKindOf(config).preview == core::DatasetPreviewKind::kImages && shape.image() &&
        shape.dims[0] == 1 && shape.dims[1] == shape.dims[2]) {
      p.imageSide = shape.dims[2];
      const int64_t shown = std::min<int64_t>(n, 12);
      for (int64_t i = 0; i < shown; ++i) {
        p.images.emplace_back(x.row(i), x.row(i) + data->features());
        p.imageLabels.push_back(static_cast<int>(y.data()[i]));
      }
    }
    if (!p.classification) {
      p.shardNote = "regression: no classes to count";
    } else if (data->size(core::Split::kTrain) > kMaxCountedSamples) {
      p.shardNote = "training set larger than " + std::to_string(kMaxCountedSamples) +
                    " samples: shard histogram not computed";
    } else {
      const auto shards = core::partitionTrain(*data, workers, partition);
      p.shardClassCounts = core::classCounts(*data, shards);
    }
  } catch (const std::exception& e) {
    p.error = e.what();
  }
  return p;
}

}  // namespace dtlab::ui
