// The spec parser (core/spec) on any text: it accepts, and the spec it returns writes out and
// reads back as itself, or it throws a SpecError whose message names where and what. Any
// other exception, a crash or a sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "tests/core/spec_samples.h"
#include "tests/fuzz/fuzz_support.h"

using dtlab::core::ExperimentSpec;
using dtlab::core::SpecError;
using dtlab::fuzz::finding;

// Seeds beside the example specs of resources/specs: the spec tests' varied specs (every
// dataset kind, strategy and enum value), written out complete.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  return dtlab::fuzz::writeSeedsIfAsked([](const std::filesystem::path& dir) {
    std::filesystem::create_directories(dir);
    int index = 0;
    for (const ExperimentSpec& spec : dtlab::core::test::variedSpecs())
      std::ofstream(dir / ("varied-" + std::to_string(index++) + ".json"))
          << dtlab::core::toJson(spec).dump(2) << "\n";
  });
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  ExperimentSpec spec;
  try {
    spec = dtlab::core::parseExperimentSpecText(text);
  } catch (const SpecError& e) {
    dtlab::fuzz::requireUserMessage(e, text);
    if (std::string(e.what()) != e.path() + ": " + e.reason() || e.reason().empty())
      finding(std::string("a SpecError without a path and a reason: ") + e.what(), text);
    return 0;
  }
  // Accepted: the complete written form reads back as the same spec, and as text too.
  const nlohmann::json written = dtlab::core::toJson(spec);
  try {
    if (!(dtlab::core::parseExperimentSpec(written) == spec))
      finding("an accepted spec does not read back as itself", text);
    if (!(dtlab::core::parseExperimentSpecText(written.dump(2)) == spec))
      finding("an accepted spec's text does not read back as itself", text);
  } catch (const SpecError& e) {
    finding(std::string("the written form of an accepted spec is refused: ") + e.what(), text);
  }
  return 0;
}
