// `dtlab-cli bench data`: how fast each dataset kind's samples are made, on the host (the
// dataset, one thread, as a worker makes them) and, with --device cuda:N, by that GPU's
// sample source into its memory (the same generator function, one thread per sample).
#include "remote/bench/bench_data.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/backend/backend.h"
#include "core/data/dataset.h"
#include "core/data/dataset_kinds.h"
#include "core/train/core_bench.h"
#include "remote/bench/bench_common.h"

namespace dtlab::bench {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

std::vector<std::string> dataBenchKinds() {
  return core::datasetKindNames();
}

DataBenchResult runDataBench(const DataBenchOptions& options, std::FILE* out) {
  const int64_t samples = options.samples;
  const int reps = options.repetitions;
  const std::string& device = options.device;
  const std::vector<std::string> kinds = options.kinds.empty() ? dataBenchKinds() : options.kinds;
  std::unique_ptr<core::Backend> backend;
  if (device != "cpu") {
    backend = core::makeBackend(device, 1);  // names why when there is no such GPU
    if (backend->hostMemory())
      throw OptionError("--device " + device + ": samples are made on the host there already");
  }

  std::fprintf(
      out,
      "bench data: %lld training samples of each kind (default sizes), made into memory; the "
      "host side one thread, as a worker makes them%s; median of %d repetitions, wall clock\n",
      static_cast<long long>(samples),
      backend ? (", against " + backend->name() + "'s sample source").c_str() : "", reps);
  std::fprintf(out, "  %s\n", machineDescription().c_str());
  if (backend) {
    std::fprintf(out, "  %-18s %8s %16s %16s %8s\n", "kind", "features", "host samples/s",
                 "device samples/s", "ratio");
  } else {
    std::fprintf(out, "  %-18s %8s %16s\n", "kind", "features", "host samples/s");
  }
  std::vector<int64_t> indices(static_cast<std::size_t>(samples));
  std::iota(indices.begin(), indices.end(), int64_t{0});
  DataBenchResult result;
  std::vector<DataKindResult>& results = result.kinds;
  for (const std::string& kind : kinds) {
    core::DatasetConfig config = core::defaultDataset(kind);
    config.trainSize = samples;
    config.testSize = 0;
    config.seed = 1;
    const auto dataset = core::makeDataset(config);
    DataKindResult r{kind, dataset->features()};
    std::vector<float> x(static_cast<std::size_t>(samples * r.features));
    std::vector<float> y(static_cast<std::size_t>(samples * dataset->targets()));
    std::vector<double> host;
    std::vector<double> onDevice;
    std::unique_ptr<core::SampleSource> source;
    float* dx = nullptr;
    float* dy = nullptr;
    if (backend && dataset->program() != nullptr)
      source = backend->makeSampleSource(*dataset->program());
    if (source) {
      dx = backend->allocate(samples * r.features);
      dy = backend->allocate(samples);
      source->generate(core::Split::kTrain, indices, dx, dy);  // untimed: loads the kernel
      backend->synchronize();
    }
    for (int rep = 0; rep < reps; ++rep) {  // the two sides interleaved
      auto start = Clock::now();
      dataset->generate(core::Split::kTrain, 0, samples, x.data(), y.data());
      host.push_back(static_cast<double>(samples) / secondsSince(start));
      if (!source) continue;
      start = Clock::now();
      source->generate(core::Split::kTrain, indices, dx, dy);
      backend->synchronize();
      onDevice.push_back(static_cast<double>(samples) / secondsSince(start));
    }
    if (source) {
      backend->release(dx);
      backend->release(dy);
      r.deviceRate = core::median(onDevice);
    }
    r.hostRate = core::median(host);
    if (source) {
      std::fprintf(out, "  %-18s %8lld %16.0f %16.0f %7.1fx\n", kind.c_str(),
                   static_cast<long long>(r.features), r.hostRate, r.deviceRate,
                   r.deviceRate / r.hostRate);
    } else if (backend) {  // a kind without a device generator: its rows are copied over
      std::fprintf(out, "  %-18s %8lld %16.0f %16s %8s\n", kind.c_str(),
                   static_cast<long long>(r.features), r.hostRate, "host only", "-");
    } else {
      std::fprintf(out, "  %-18s %8lld %16.0f\n", kind.c_str(), static_cast<long long>(r.features),
                   r.hostRate);
    }
    std::fflush(out);
    results.push_back(r);
  }
  {
    nlohmann::json rows = nlohmann::json::array();
    for (const DataKindResult& r : results) {
      nlohmann::json row = {
          {"kind", r.kind}, {"features", r.features}, {"host_samples_per_s", r.hostRate}};
      if (r.deviceRate > 0.0) {
        row["device_samples_per_s"] = r.deviceRate;
        row["device_over_host"] = r.deviceRate / r.hostRate;
      }
      rows.push_back(row);
    }
    result.json = {{"bench", "data"}, {"device", device}, {"samples", samples}, {"kinds", rows}};
  }
  return result;
}

}  // namespace dtlab::bench
