#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/common/check.h"
#include "core/train/core_bench.h"

namespace dtlab::bench {

// Options a benchmark cannot run with, found only once it looks at the machine (no such GPU
// feature, ...). The CLI reports them as usage errors, naming the flag.
class OptionError : public Error {
 public:
  using Error::Error;
};

// "machine: <CPU model> (family F model M), N cores, load average A B C": printed by every
// benchmark, since the figures mean little without it (and this machine may be shared).
std::string machineDescription();

// "2026-12-03 06:24 UTC": when a benchmark's figures were measured.
std::string utcNow();

// The idle threads of the side that just ran may still spin for a while (OpenMP pools,
// OpenBLAS's workers); the next side's repetition starts after they have gone to sleep.
void settle();

// Runs a spec as a user runs it, `<self> run SPEC --repeats R --quiet --project P` in a child
// process (so the running binary must be dtlab-cli), and returns its summaries ({"runs":
// [...]}). A failed variant's summary says why; a run that prints none throws.
// `launcher` goes before the command (e.g. `ip netns exec NS`), `extra` after it.
nlohmann::json runSpecThroughCli(const std::string& spec, int repeats, const std::string& project,
                                 const std::vector<std::string>& launcher = {},
                                 const std::vector<std::string>& extra = {});

// "MLP 256-1024x2-10": the shape `bench core` and `bench train` measure.
std::string shapeText(const core::CoreBenchConfig& c);
// The same shape as the reference scripts' flags (--batch B --in D ...).
std::vector<std::string> shapeArgs(const core::CoreBenchConfig& c);

}  // namespace dtlab::bench
