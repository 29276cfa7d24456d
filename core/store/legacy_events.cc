#include "core/store/legacy_events.h"

#include <cctype>
#include <string>

#include "core/comm/allreduce_tuning.h"

namespace dtlab::core {
namespace {

// The digits right before `at` in `text`, as a number (0: none).
int64_t numberBefore(std::string_view text, std::size_t at) {
  std::size_t begin = at;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(text[begin - 1]))) --begin;
  if (begin == at || at - begin > 9) return 0;
  return std::stoll(std::string(text.substr(begin, at - begin)));
}

}  // namespace

std::optional<NodeFacts> legacyNodeFacts(std::string_view detail) {
  if (!detail.starts_with("node")) return std::nullopt;
  std::size_t digits = 4;
  while (digits < detail.size() && std::isdigit(static_cast<unsigned char>(detail[digits])))
    ++digits;
  const std::size_t named = detail.find("): host ");
  if (digits == 4 || digits > 13 || named == std::string_view::npos) return std::nullopt;
  NodeFacts f;
  f.node = static_cast<int>(std::stoll(std::string(detail.substr(4, digits - 4))));
  f.label = std::string(detail.substr(0, named + 1));
  // "host H, DTLab V[, MACHINE][; DEVICE]..."
  std::string_view rest = detail.substr(named + 8);
  const std::size_t devicesAt = rest.find("; ");
  std::string_view machine = rest.substr(0, devicesAt);
  for (std::string_view devices = devicesAt == std::string_view::npos ? std::string_view()
                                                                      : rest.substr(devicesAt + 2);
       !devices.empty();) {
    const std::size_t next = devices.find("; ");
    f.devices.emplace_back(devices.substr(0, next));
    devices = next == std::string_view::npos ? std::string_view() : devices.substr(next + 2);
  }
  const std::size_t hostEnd = machine.find(", ");
  f.host = std::string(machine.substr(0, hostEnd));
  machine = hostEnd == std::string_view::npos ? std::string_view() : machine.substr(hostEnd + 2);
  if (machine.starts_with("DTLab ")) {
    const std::size_t versionEnd = machine.find(", ");
    f.version = std::string(machine.substr(
        6, versionEnd == std::string_view::npos ? std::string_view::npos : versionEnd - 6));
    machine =
        versionEnd == std::string_view::npos ? std::string_view() : machine.substr(versionEnd + 2);
  }
  f.machine = std::string(machine);
  if (const std::size_t cores = machine.find(" cores"); cores != std::string_view::npos)
    f.cores = numberBefore(machine, cores);
  return f;
}

std::optional<PhaseFacts> legacyPhaseFacts(std::string_view kind, std::string_view detail) {
  if (kind == kSwitchEvent) return PhaseFacts{detail.starts_with("sync -> async")};
  if (kind == kPhaseEvent) return PhaseFacts{detail.starts_with("asynchronous")};
  return std::nullopt;
}

std::optional<CollectiveFacts> legacyCollectiveFacts(std::string_view detail) {
  constexpr std::string_view kBuckets = "gradient buckets of ";
  const std::size_t at = detail.find(kBuckets);
  if (at == std::string_view::npos) return std::nullopt;
  CollectiveFacts f;
  f.bucketBytes = parseByteSizeText(detail.substr(at + kBuckets.size())).value_or(0);
  for (const AllReduceTuning::SizeClass& s : readTimedCalls(detail).sizes)
    f.calls.push_back({s.bytes, s.best().algorithm, s.best().seconds * 1e3});
  return f;
}

}  // namespace dtlab::core
