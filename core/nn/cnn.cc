#include "core/nn/cnn.h"

#include <string>

#include "core/common/check.h"
#include "core/nn/model_kinds.h"
#include "core/nn/sequential.h"

namespace dtlab::core {
namespace {

using detail::concat;

const std::vector<SettingSchema>& cnnSettings() {
  static const std::vector<SettingSchema> settings = {
      {.key = "channels",
       .type = SettingType::kInteger,
       .label = "Channels",
       .help = "channels of the first block's convolution; each further block doubles them",
       .defaultValue = int64_t{16},
       .min = 1,
       .max = 1024},
      {.key = "blocks",
       .type = SettingType::kInteger,
       .label = "Blocks",
       .help = "convolution blocks, each a convolution, the activation and a 2 x 2 pooling "
               "that halves the image",
       .defaultValue = int64_t{2},
       .min = 1,
       .max = 8},
      {.key = "kernel",
       .type = SettingType::kInteger,
       .label = "Kernel",
       .help = "side of the square convolution kernels (odd: the padding keeps the image's size)",
       .defaultValue = int64_t{3},
       .min = 1,
       .max = 11},
      {.key = "pool",
       .type = SettingType::kChoice,
       .label = "Pooling",
       .help = "how a block's 2 x 2 pooling reduces each window: its maximum or its average",
       .defaultValue = std::string("max"),
       .choices = {"max", "average"}},
  };
  return settings;
}

}  // namespace

std::vector<std::unique_ptr<Layer>> cnnLayers(const ModelConfig& config, const SampleShape& samples,
                                              const std::string& path) {
  if (!samples.image())
    throw SpecError(
        path + ".kind",
        concat("the cnn model needs images (channels x height x width), and this "
               "dataset's samples are vectors of ",
               samples.features, " features; use an image dataset (shapes) or the mlp"));
  const SettingsView view(cnnSettings(), config.parameters);
  const int64_t blocks = view.integer("blocks");
  const int64_t kernel = view.integer("kernel");
  if (kernel % 2 == 0)
    throw SpecError(path + ".kernel", concat("must be odd (got ", kernel,
                                             "), so that the padding keeps the image's size"));
  const PoolKind pool = view.choice("pool") == "max" ? PoolKind::kMax : PoolKind::kAverage;
  std::vector<std::unique_ptr<Layer>> layers;
  std::vector<int64_t> dims = samples.dims;
  int64_t channels = view.integer("channels");
  for (int64_t b = 0; b < blocks; ++b) {
    if (dims[1] < 2 || dims[2] < 2)
      throw SpecError(path + ".blocks", concat(blocks, " blocks halve ", samples.dims[1], " x ",
                                               samples.dims[2], " images to nothing; at most ", b));
    if (channels > kMaxWidth)
      throw SpecError(path + ".channels", concat("block ", b, " would have ", channels,
                                                 " channels, above the limit of ", kMaxWidth));
    layers.push_back(std::make_unique<Conv2dLayer>(concat("conv", b), dims, channels, kernel, 1,
                                                   kernel / 2, config.activation, pool));
    dims = layers.back()->outputDims();
    channels *= 2;
  }
  int64_t width = layers.back()->outputSize();
  for (std::size_t i = 0; i < config.hidden.size(); ++i) {
    layers.push_back(std::make_unique<DenseLayer>(concat("dense", i), width, config.hidden[i],
                                                  config.activation));
    width = config.hidden[i];
  }
  layers.push_back(std::make_unique<DenseLayer>(concat("dense", config.hidden.size()), width,
                                                samples.outputs, std::nullopt));
  return layers;
}

ModelKindDescriptor cnnKind() {
  ModelKindDescriptor d;
  d.name = "cnn";
  d.summary =
      "A convolutional network for images: blocks of a convolution, the activation and a "
      "2 x 2 pooling, then dense layers of the hidden widths and a dense output layer";
  d.parameters = cnnSettings();
  d.parameterCount = [](const ModelConfig& config, const SampleShape& samples) {
    return parameterCount(cnnLayers(config, samples));
  };
  d.forwardMacs = [](const ModelConfig& config, const SampleShape& samples) {
    return forwardMacs(cnnLayers(config, samples));
  };
  d.activationFloats = [](const ModelConfig& config, const SampleShape& samples) {
    return keptFloats(cnnLayers(config, samples));
  };
  d.shape = [](const ModelConfig& config, const SampleShape& samples) {
    const SettingsView view(cnnSettings(), config.parameters);
    std::string text =
        concat("CNN ", samples.dims.at(0), "x", samples.dims.at(1), "x", samples.dims.at(2));
    int64_t channels = view.integer("channels");
    char separator = ' ';
    for (int64_t b = 0; b < view.integer("blocks"); ++b, channels *= 2) {
      (text += separator) += concat("c", channels);
      separator = '-';
    }
    text += concat(" k", view.integer("kernel"), " ", view.choice("pool"), "pool");
    separator = ' ';
    for (int64_t width : config.hidden) {
      (text += separator) += std::to_string(width);
      separator = '-';
    }
    (text += separator) += std::to_string(samples.outputs);
    return text;
  };
  d.check = [](const ModelConfig& config, const SampleShape& samples, const std::string& path) {
    cnnLayers(config, samples, path);
  };
  d.make = [](Backend& backend, const ModelConfig& config, const SampleShape& samples,
              int64_t controlSlots) -> std::unique_ptr<Model> {
    return std::make_unique<SequentialModel>(backend, cnnLayers(config, samples), controlSlots);
  };
  return d;
}

}  // namespace dtlab::core
