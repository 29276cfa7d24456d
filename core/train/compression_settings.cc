#include "core/train/compression_settings.h"

#include <string>

#include "core/nn/model.h"

namespace dtlab::core {

std::vector<SettingSchema> compressionSettings(bool collective) {
  std::vector<std::string> kinds;
  for (CompressionKind k : compressionKinds())
    if (collective || k != CompressionKind::kPowerSgd) kinds.emplace_back(toString(k));
  std::vector<std::string> compressed(kinds.begin() + 1, kinds.end());
  const SettingSchema kind{
      .key = "compression",
      .type = SettingType::kChoice,
      .label = "Compression",
      .help =
          "How gradients and weights travel: float32 (none), 16-bit floats (fp16, bf16), the "
          "largest values only (topk) or a low-rank product (powersgd), the last two with "
          "error feedback",
      .defaultValue = std::string("none"),
      .choices = kinds};
  const SettingSchema ratio{.key = "topk_ratio",
                            .type = SettingType::kReal,
                            .label = "Top-k\nratio",
                            .help = "The share of values top-k sends each step (0.01: 1%)",
                            .defaultValue = 0.01,
                            .min = 0.0,
                            .max = 1.0,
                            .minOpen = true,
                            .when = SettingCondition{"compression", {"topk"}}};
  const SettingSchema rank{.key = "powersgd_rank",
                           .label = "PowerSGD\nrank",
                           .help = "The rank of PowerSGD's approximation of each matrix",
                           .defaultValue = int64_t{2},
                           .min = 1,
                           .max = 64,
                           .when = SettingCondition{"compression", {"powersgd"}}};
  const SettingSchema start{
      .key = "start_step",
      .label = "Compress\nafter step",
      .help = "Steps trained uncompressed before compression starts (PowerSGD's warm-up)",
      .defaultValue = int64_t{0},
      .min = 0,
      .max = 1'000'000'000,
      .when = SettingCondition{"compression", compressed}};
  if (!collective) return {kind, ratio, start};
  return {kind, ratio, rank, start};
}

CompressionConfig compressionOf(const SettingsView& settings) {
  CompressionConfig c;
  const std::string& kind = settings.choice("compression");
  for (CompressionKind k : compressionKinds())
    if (kind == toString(k)) c.kind = k;
  const auto applies = [&](std::string_view key) {
    return settings.declares(key) && settings.applies(key);
  };
  if (applies("topk_ratio")) c.ratio = settings.real("topk_ratio");
  if (applies("powersgd_rank")) c.rank = settings.integer("powersgd_rank");
  if (applies("start_step")) c.startStep = settings.integer("start_step");
  return c;
}

std::vector<CompressedTensor> modelShapes(const Model& model) {
  std::vector<CompressedTensor> shapes;
  for (const ParameterTensor& t : model.tensors())
    shapes.push_back({t.range(), t.rows(), t.columns()});
  return shapes;
}

}  // namespace dtlab::core
