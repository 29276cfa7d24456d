#include "remote/bench/bench_common.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/backend/cpu_backend.h"
#include "core/common/program_path.h"
#include "core/data/dataset_kinds.h"
#include "core/nn/model_kinds.h"

namespace dtlab::bench {

std::string utcNow() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  return text;
}

std::string machineDescription() {
  std::string model = "unknown CPU", family, number;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "model name") model = value;
    if (key == "cpu family") family = value;
    if (key == "model") number = value;
    if (line.empty() || (key == "processor" && !family.empty())) break;  // the first CPU only
  }
  std::string load;
  std::ifstream loadavg("/proc/loadavg");
  for (int i = 0; i < 3; ++i) {
    std::string field;
    if (loadavg >> field) load += (i == 0 ? "" : " ") + field;
  }
  std::string out = "machine: " + model;
  if (!family.empty()) out += " (family " + family + " model " + number + ")";
  out += ", " + std::to_string(core::availableCores()) + " cores";
  if (!load.empty()) out += ", load average " + load;
  return out;
}

void settle() {
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
}

std::string shapeText(const core::CoreBenchConfig& c) {
  if (c.model != "mlp") {
    const core::ExperimentSpec spec = core::coreBenchSpec(c);
    return core::modelKindOf(spec.model).shape(spec.model, core::sampleShapeOf(spec.dataset));
  }
  return "MLP " + std::to_string(c.inputs) + "-" + std::to_string(c.hidden) + "x" +
         std::to_string(c.layers) + "-" + std::to_string(c.classes);
}

std::vector<std::string> shapeArgs(const core::CoreBenchConfig& c) {
  std::vector<std::string> args = {
      "--batch",   std::to_string(c.batch),  "--in",     std::to_string(c.inputs),
      "--hidden",  std::to_string(c.hidden), "--layers", std::to_string(c.layers),
      "--classes", std::to_string(c.classes)};
  if (c.model != "mlp") {  // the MLP's references (torch_ddp.py too) know no other flags
    for (const std::string& a :
         {std::string("--model"), c.model, std::string("--channels"), std::to_string(c.channels),
          std::string("--blocks"), std::to_string(c.blocks), std::string("--tokens"),
          std::to_string(c.tokens), std::string("--heads"), std::to_string(c.heads)})
      args.push_back(a);
  }
  return args;
}

namespace {

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string selfPath() {
  const std::filesystem::path self = core::programPath();
  return self.empty() ? "dtlab-cli" : self.string();
}

}  // namespace

nlohmann::json runSpecThroughCli(const std::string& spec, int repeats, const std::string& project,
                                 const std::vector<std::string>& launcher,
                                 const std::vector<std::string>& extra) {
  std::string command;
  for (const std::string& word : launcher) command.append(quoted(word)).append(" ");
  command += quoted(selfPath()) + " run " + quoted(spec) + " --repeats " + std::to_string(repeats) +
             " --quiet --project " + quoted(project);
  for (const std::string& word : extra) command.append(" ").append(quoted(word));
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

}  // namespace dtlab::bench
