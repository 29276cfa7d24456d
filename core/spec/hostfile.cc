#include "core/spec/hostfile.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "core/common/check.h"
#include "core/common/text_lines.h"
#include "core/spec/number_format.h"
#include "core/spec/spec_reader.h"

namespace dtlab::core {
namespace {

using spec_detail::concat;
using spec_detail::formatNumber;
using spec_detail::Interval;
using spec_detail::kNodeLatencyMs;
using spec_detail::kNodeSpeed;
using spec_detail::kNonNegative;

constexpr std::string_view kKeys = "slots, speed, bandwidth_mbps, latency_ms";

// The line's words, split at spaces and tabs.
std::vector<std::string_view> wordsOf(std::string_view line) {
  std::vector<std::string_view> words;
  std::size_t at = 0;
  while (at < line.size()) {
    const auto begin = line.find_first_not_of(" \t", at);
    if (begin == std::string_view::npos) break;
    const auto end = line.find_first_of(" \t", begin);
    words.push_back(line.substr(begin, end == std::string_view::npos ? end : end - begin));
    at = end == std::string_view::npos ? line.size() : end;
  }
  return words;
}

// HOST, HOST:PORT, [V6] or [V6]:PORT as HOST:PORT: a port is added where none is given.
std::string withPort(std::string_view host) {
  const bool bracketed = !host.empty() && host.front() == '[';
  const bool hasPort = bracketed ? host.find("]:") != std::string_view::npos
                                 : host.find(':') != std::string_view::npos;
  std::string address(host);
  if (!hasPort) address.append(":").append(std::to_string(kDefaultNodePort));
  return address;
}

double numberOf(std::string_view text, const std::string& where, std::string_view key,
                const Interval& allowed) {
  double value = 0.0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
      !std::isfinite(value))
    throw SpecError(where, concat(key, " must be a number, got '", text, "'"));
  if (!allowed.contains(value))
    throw SpecError(where, concat(key, " must be ", allowed.text(), ", got ", text));
  return value;
}

}  // namespace

std::vector<HostfileNode> parseHostfile(std::string_view text, const std::string& source) {
  std::vector<HostfileNode> nodes;
  std::set<std::string> addresses;
  forEachContentLine(text, [&](int lineNumber, std::string_view line) {
    const std::string where = concat(source, ":", lineNumber);
    if (nodes.size() >= static_cast<std::size_t>(kMaxClusterNodes))
      throw SpecError(where, concat("at most ", kMaxClusterNodes, " nodes"));
    const std::vector<std::string_view> words = wordsOf(line);
    HostfileNode entry;
    entry.line = lineNumber;
    NodeConfig& node = entry.node;
    node.address = withPort(words.front());
    if (const std::string problem = nodeAddressProblem(node.address); !problem.empty())
      throw SpecError(where, concat("the node's address ", problem));
    if (!addresses.insert(node.address).second)
      throw SpecError(where, concat(node.address,
                                    " is listed twice (several workers on one daemon are its "
                                    "slots: dtlab-node --devices cpu:N)"));
    std::set<std::string_view> seen;
    for (std::size_t i = 1; i < words.size(); ++i) {
      const auto equals = words[i].find('=');
      if (equals == std::string_view::npos || equals == 0)
        throw SpecError(
            where, concat("expected KEY=VALUE (", kKeys, ") after the host, got '", words[i], "'"));
      const std::string_view key = words[i].substr(0, equals);
      const std::string_view value = words[i].substr(equals + 1);
      if (!seen.insert(key).second) throw SpecError(where, concat(key, " is given twice"));
      if (key == "slots") {
        const double slots =
            numberOf(value, where, key, Interval{1, kMaxHostfileSlots, true, true});
        if (slots != std::floor(slots))
          throw SpecError(where, concat("slots must be a whole number, got ", value));
        entry.workerSlots = static_cast<int>(slots);
      } else if (key == "speed") {
        node.speed = numberOf(value, where, key, kNodeSpeed);
      } else if (key == "bandwidth_mbps") {
        node.bandwidthMbps = numberOf(value, where, key, kNonNegative);
      } else if (key == "latency_ms") {
        node.latencyMs = numberOf(value, where, key, kNodeLatencyMs);
      } else {
        throw SpecError(where, concat("unknown key '", key, "' (known: ", kKeys, ")"));
      }
    }
    nodes.push_back(std::move(entry));
  });
  if (nodes.empty())
    throw SpecError(source, "names no node (one HOST[:PORT] [slots=N] [speed=F] ... a line)");
  return nodes;
}

std::vector<HostfileNode> loadHostfile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SpecError(path, "cannot read the hostfile");
  std::ostringstream text;
  text << in.rdbuf();
  return parseHostfile(text.str(), path);
}

std::string formatHostfile(const std::vector<HostfileNode>& nodes) {
  const NodeConfig defaults;
  std::string out =
      "# DTLab hostfile: HOST[:PORT] [slots=N] [speed=F] [bandwidth_mbps=F] [latency_ms=F]\n";
  for (const HostfileNode& entry : nodes) {
    const NodeConfig& n = entry.node;
    DTLAB_ENFORCE(!n.address.empty(), "a hostfile lists running daemons: a node has no address");
    out += n.address;
    if (entry.workerSlots) out += concat(" slots=", *entry.workerSlots);
    if (n.speed != defaults.speed) out += concat(" speed=", formatNumber(n.speed));
    if (n.bandwidthMbps != defaults.bandwidthMbps)
      out += concat(" bandwidth_mbps=", formatNumber(n.bandwidthMbps));
    if (n.latencyMs != defaults.latencyMs) out += concat(" latency_ms=", formatNumber(n.latencyMs));
    out += "\n";
  }
  return out;
}

std::vector<NodeConfig> nodesOf(const std::vector<HostfileNode>& nodes) {
  std::vector<NodeConfig> out;
  for (const HostfileNode& entry : nodes) out.push_back(entry.node);
  return out;
}

}  // namespace dtlab::core
