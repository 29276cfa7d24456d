#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/data/partition.h"

namespace dtlab::ui {

// What the dataset editor shows of a dataset configuration, computed off the GUI thread
// from the real generators (core/data), so the preview is the data training will see.
struct DatasetPreview {
  std::string error;      // the spec's own message ("dataset.classes: ...") when invalid
  nlohmann::json config;  // the configuration as the spec parser completed it
  bool classification = true;
  int64_t features = 0;
  int64_t classes = 0;
  // The first two features of the first samples of the test split (one point each), with
  // the class (or, for regression, the target in `target`).
  std::vector<double> x, y, target;
  std::vector<int> label;
  // Kinds previewed as images (shapes): the first images (imageSide x imageSide, row-major)
  // and their classes.
  int64_t imageSide = 0;
  std::vector<std::vector<float>> images;
  std::vector<int> imageLabels;
  // Kinds previewed as tokens (sequences): the first samples' token ids, inputs and targets.
  struct Sequence {
    std::vector<float> inputs, targets;
  };
  std::vector<Sequence> sequences;
  // The lowest mean loss per label any model can reach, where the kind knows it (nats).
  std::optional<double> lossFloor;
  // Per worker, the class counts of its training shard under the chosen partition
  // (classification only; empty when the training set is too large to count quickly).
  std::vector<std::vector<int64_t>> shardClassCounts;
  std::string shardNote;  // why there is no histogram, when there is none
};

// Validates `dataset` (the "dataset" object of a spec) and computes the preview. Never throws:
// an invalid configuration comes back with `error` set.
DatasetPreview computeDatasetPreview(const nlohmann::json& dataset, int workers,
                                     const core::PartitionConfig& partition,
                                     int64_t samples = 1500);

}  // namespace dtlab::ui
