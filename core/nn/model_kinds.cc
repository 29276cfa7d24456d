#include "core/nn/model_kinds.h"

#include <algorithm>

#include "core/common/registry.h"
#include "core/optim/optimizer.h"

namespace dtlab::core {
namespace {

void checkComplete(const ModelKindDescriptor& d) {
  if (!d.make) throw Error("model kind '" + d.name + "' has no make function");
  if (!d.parameterCount) throw Error("model kind '" + d.name + "' has no parameter count");
  if (!d.forwardMacs) throw Error("model kind '" + d.name + "' has no forward cost");
  if (!d.shape) throw Error("model kind '" + d.name + "' has no shape text");
  checkSchema(d.parameters, "model kind '" + d.name + "'");
}

Registry<ModelKindDescriptor>& registry() {
  // Never destroyed: kinds may be looked up during exit.
  static auto* instance =
      new Registry<ModelKindDescriptor>("model kind", checkComplete, builtinModelKinds());
  return *instance;
}

}  // namespace

std::vector<const ModelKindDescriptor*> modelKinds() {
  return registry().all();
}

const ModelKindDescriptor* findModelKind(std::string_view name) {
  return registry().find(name);
}

const ModelKindDescriptor& modelKindOf(const ModelConfig& config) {
  const ModelKindDescriptor* d = findModelKind(config.kind);
  if (d == nullptr) {
    std::vector<std::string> names = modelKindNames();
    throw Error("model kind '" + config.kind +
                "' is not available in this build (it has: " + listText(names) + ")");
  }
  return *d;
}

void registerModelKind(ModelKindDescriptor descriptor) {
  registry().add(std::move(descriptor));
}

std::vector<std::string> modelKindNames() {
  std::vector<std::string> names;
  for (const ModelKindDescriptor* d : modelKinds()) names.push_back(d->name);
  return names;
}

std::unique_ptr<Model> makeModel(Backend& backend, const ModelConfig& config,
                                 const SampleShape& samples, int64_t controlSlots) {
  const ModelKindDescriptor& kind = modelKindOf(config);
  // A config built in code has not met the parser: the kind's refusals hold here too.
  if (kind.check) kind.check(config, samples, "model");
  std::unique_ptr<Model> model = kind.make(backend, config, samples, controlSlots);
  DTLAB_ENFORCE(model->inputs() == samples.features && model->outputs() == samples.outputs,
                "model kind '", config.kind, "' built a model for ", model->inputs(), " -> ",
                model->outputs(), " from samples of ", samples.features, " -> ", samples.outputs);
  return model;
}

int64_t modelParameterCount(const ExperimentSpec& spec) {
  return modelKindOf(spec.model).parameterCount(spec.model, sampleShapeOf(spec.dataset));
}

ReplicaFootprint replicaFootprint(const ExperimentSpec& spec) {
  const ModelKindDescriptor& kind = modelKindOf(spec.model);
  const SampleShape samples = sampleShapeOf(spec.dataset);
  ReplicaFootprint f;
  f.parameters = kind.parameterCount(spec.model, samples);
  f.forwardMacsPerSample = kind.forwardMacs(spec.model, samples);
  if (kind.activationFloats)
    f.activationFloatsPerSample = kind.activationFloats(spec.model, samples);
  // The optimizer's own count of its state vectors.
  const std::unique_ptr<Optimizer> optimizer = makeOptimizer(spec.optimizer);
  optimizer->init(1);
  f.optimizerVectors = static_cast<int64_t>(optimizer->state().size());
  const int64_t nodes = std::max<int64_t>(1, spec.cluster.localNodes);
  f.localBatch = (spec.training.batchSize + nodes - 1) / nodes;
  return f;
}

ModelConfig canonicalModel(const ModelConfig& config) {
  return canonicalKindConfig(config, findModelKind(config.kind));
}

}  // namespace dtlab::core
