// dtlab-cli bench strategies: every example comparison of resources/specs run as a user runs
// it (`dtlab-cli run SPEC --quiet --project P`, a child process each), then the README's
// results table and the claims, each with the figure that meets it or not.
#include "remote/bench/bench_strategies.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/spec/experiment_spec.h"
#include "core/store/comparison.h"
#include "remote/bench/bench_common.h"

namespace dtlab::bench {
namespace {

// The comparisons and what the issue claims for them.
constexpr const char* kSpecs[] = {"hetero_2node", "hetero_4node", "drift", "modes_straggler",
                                  "noniid"};

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string selfPath() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? "dtlab-cli" : self.string();
}

// Runs the spec through `dtlab-cli run` and returns its summaries ({"runs": [...]}).
nlohmann::json runSpec(const std::string& spec, const std::string& project) {
  const std::string command =
      quoted(selfPath()) + " run " + quoted(spec) + " --quiet --project " + quoted(project);
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) throw Error("cannot run: " + command);
  std::string output;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  pclose(pipe);  // a failed variant exits 1; its summary says why, and the table shows it
  const auto last = output.find_last_of('\n', output.size() >= 2 ? output.size() - 2 : 0);
  const std::string line = last == std::string::npos ? output : output.substr(last + 1);
  try {
    return nlohmann::json::parse(line);
  } catch (const std::exception&) {
    throw Error("dtlab-cli run " + spec + " printed no summaries (see its errors above)");
  }
}

std::string number(const std::optional<double>& v, int digits) {
  if (!v) return "–";
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", digits, *v);
  return text;
}

const nlohmann::json* runNamed(const nlohmann::json& runs, const std::string& name) {
  for (const nlohmann::json& r : runs)
    if (r.value("name", "") == name) return &r;
  return nullptr;
}

std::optional<double> field(const nlohmann::json* run, const char* key) {
  if (run == nullptr || !run->contains(key) || !(*run)[key].is_number()) return std::nullopt;
  return (*run)[key].get<double>();
}

// Each claim's median over the repetitions (claimsOf lists the same claims for every one);
// a repetition that could not measure a claim counts as failing it (lowest).
std::vector<StrategyClaim> medianClaims(
    const std::vector<std::vector<StrategyClaim>>& perRepetition) {
  std::vector<StrategyClaim> merged = perRepetition.front();
  for (std::size_t k = 0; k < merged.size(); ++k) {
    std::vector<double> values;
    bool missing = false;
    for (const std::vector<StrategyClaim>& claims : perRepetition) {
      if (k < claims.size() && claims[k].measured)
        values.push_back(*claims[k].measured);
      else
        missing = true;
    }
    merged[k].repetitions = values;
    std::vector<double> sorted = values;
    std::sort(sorted.begin(), sorted.end());
    // Missing figures sort first: with them, the median is taken over all repetitions.
    const std::size_t count = perRepetition.size();
    const std::size_t offset = count - sorted.size();
    const std::size_t mid = count / 2;
    merged[k].measured =
        missing && mid < offset ? std::nullopt : std::optional(sorted[mid - offset]);
  }
  return merged;
}

// a / b when both exist and b > 0.
std::optional<double> ratio(std::optional<double> a, std::optional<double> b) {
  if (!a || !b || *b <= 0.0) return std::nullopt;
  return *a / *b;
}

std::vector<StrategyClaim> claimsOf(const std::string& name, const nlohmann::json& runs) {
  std::vector<StrategyClaim> claims;
  if (name == "hetero_2node" || name == "drift") {
    const nlohmann::json* equal = runNamed(runs, "equal");
    const nlohmann::json* fast = runNamed(runs, "speed_proportional");
    const double wanted = name == "drift" ? 1.5 : 2.0;
    claims.push_back({name + ": speed_proportional reaches the target sooner than equal (x)",
                      ratio(field(equal, "time_to_target_s"), field(fast, "time_to_target_s")),
                      wanted});
    // Both follow the same trajectory (share-weighted gradients equal the equal split's, up to
    // summation order), so the samples/s ratio is the speed-up of every step; the time to a
    // target on a flat stretch of the curve also moves with where rounding lets it cross.
    claims.push_back({name + ": speed_proportional samples/s over equal's (x)",
                      ratio(field(fast, "samples_per_s"), field(equal, "samples_per_s")), wanted});
    if (name == "hetero_2node" && fast != nullptr && (*fast)["utilization"].is_array()) {
      std::optional<double> least;
      for (const nlohmann::json& u : (*fast)["utilization"])
        least = std::min(least.value_or(1.0), u.get<double>());
      claims.push_back({name + ": speed_proportional's lowest worker utilisation", least, 0.85});
    }
  }
  if (name == "modes_straggler") {
    claims.push_back({name + ": async_ps samples/s over sync_allreduce's (x)",
                      ratio(field(runNamed(runs, "async_ps"), "samples_per_s"),
                            field(runNamed(runs, "sync_allreduce"), "samples_per_s")),
                      1.5});
  }
  return claims;
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  return text;
}

}  // namespace

std::vector<std::string> strategyComparisons() {
  return {std::begin(kSpecs), std::end(kSpecs)};
}

StrategiesBenchResult runStrategiesBench(const StrategiesBenchOptions& options) {
  const std::size_t reps = static_cast<std::size_t>(options.repetitions);
  const std::string& dir = options.specsDir;
  const std::string& project = options.project;
  const std::vector<std::string> names =
      options.only.empty() ? strategyComparisons() : options.only;
  StrategiesBenchResult result;
  result.repetitions = options.repetitions;
  result.project = project;
  std::string& table = result.table;
  std::vector<StrategyClaim>& claims = result.claims;
  nlohmann::json& all = result.runs;
  table =
      "| comparison | variant | time to target (s) | samples/s | utilisation | wait | "
      "staleness mean/max | comm (KiB/sample) | test accuracy | outcome |\n"
      "|---|---|---|---|---|---|---|---|---|---|\n";
  all = nlohmann::json::object();
  for (const std::string& name : names) {
    const std::string path = dir + "/" + name + ".json";
    const core::ExperimentSpec spec = core::loadExperimentSpec(path);  // errors name the file
    std::cerr << "bench strategies: " << name << " (" << spec.variants.size() << " variants)"
              << std::endl;
    // Every repetition runs the whole comparison; the claims take the median over them and
    // the table shows the repetition whose first claim is that median (the first when none).
    std::vector<nlohmann::json> repetitions;
    std::vector<std::vector<StrategyClaim>> perRepetition;
    for (std::size_t r = 0; r < reps; ++r) {
      repetitions.push_back(runSpec(path, project)["runs"]);
      perRepetition.push_back(claimsOf(name, repetitions.back()));
    }
    std::vector<std::size_t> order(reps);
    std::iota(order.begin(), order.end(), std::size_t{0});
    if (!perRepetition.front().empty())
      std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return perRepetition[a].front().measured.value_or(-1.0) <
               perRepetition[b].front().measured.value_or(-1.0);
      });
    const nlohmann::json& runs = repetitions[order[reps / 2]];
    all[name] = runs;
    const std::optional<double> target = core::specTargetAccuracy(core::toJson(spec));
    for (const nlohmann::json& summary : runs) {
      const core::ComparisonRow row = core::comparisonRow(summary, target);
      const std::optional<double> kib =
          row.bytesPerSample ? std::optional(*row.bytesPerSample / 1024.0) : std::nullopt;
      table += "| " + name + " | " + row.variant + " | " + number(row.timeToTargetS, 2) + " | " +
               number(row.samplesPerS, 0) + " | " + number(row.meanUtilization, 2) + " | " +
               number(row.meanWaitFraction, 2) + " | " + number(row.meanStaleness, 2) + " / " +
               number(row.maxStaleness, 0) + " | " + number(kib, 1) + " | " +
               number(row.finalTestAccuracy, 3) + " | " + core::comparisonOutcome(row) + " |\n";
    }
    for (StrategyClaim& c : medianClaims(perRepetition)) claims.push_back(std::move(c));
  }

  result.machine = machineDescription();
  return result;
}

nlohmann::json toJson(const StrategiesBenchResult& result) {
  nlohmann::json out = {{"bench", "strategies"},
                        {"machine", result.machine},
                        {"runs", result.runs},
                        {"claims", nlohmann::json::array()}};
  for (const StrategyClaim& c : result.claims)
    out["claims"].push_back({{"claim", c.text},
                             {"measured", c.measured ? nlohmann::json(*c.measured) : nullptr},
                             {"at_least", c.threshold},
                             {"repetitions", c.repetitions},
                             {"met", c.met()}});
  return out;
}

void writeReport(const StrategiesBenchResult& result, std::ostream& out) {
  const std::size_t reps = static_cast<std::size_t>(result.repetitions);
  out << "Measured " << today() << " by `dtlab-cli bench strategies`; " << result.machine
      << "; project " << result.project << ".\n\n"
      << result.table << "\n";
  for (const StrategyClaim& c : result.claims) {
    out << "- " << c.text << ": " << number(c.measured, 2);
    if (reps > 1) {
      out << " (median of " << reps << ":";
      for (double v : c.repetitions) out << " " << number(v, 2);
      out << ";";
    } else {
      out << " (";
    }
    out << " claim: at least " << number(c.threshold, 2) << ") " << (c.met() ? "met" : "NOT met")
        << "\n";
  }
}

}  // namespace dtlab::bench
