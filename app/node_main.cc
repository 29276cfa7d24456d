// dtlab-node: the node daemon. Hosts one worker job at a time (NodeService) and the
// Rendezvous service; see remote/node/node_server.h. Stops cleanly on SIGTERM/SIGINT.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/args.h"
#include "app/config_file.h"
#include "core/backend/backend.h"
#include "core/common/config.h"
#include "core/common/log.h"
#include "core/common/process_memory.h"
#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "remote/common/auth.h"
#include "remote/common/certificates.h"
#include "remote/common/tls.h"
#include "remote/common/versions.h"
#include "remote/node/node_server.h"

namespace {

using dtlab::app::Args;
using dtlab::app::UsageError;

constexpr const char* kUsage = R"(usage: dtlab-node [options]
       dtlab-node gen-certs DIR --hosts HOST,IP,...

Runs DTLab jobs sent by a coordinator (dtlab-cli run, the GUI) and hosts the rendezvous
its collective groups start from. Prints "dtlab-node listening on HOST:PORT" once ready.

options:
  --listen HOST:PORT      address to serve on (default 127.0.0.1:0; port 0 picks a free one)
  --advertise HOST        address of this host that the other nodes reach its collectives
                          at (default: the --listen host, or when that is 0.0.0.0 / ::, the
                          host the coordinator dialled)
  --connect-timeout S     seconds a job may take to connect to its peers before it fails
                          naming the one it could not reach (default 30)
  --devices cpu|cpu:N|cuda:N[,cuda:M...]
                          the workers this daemon runs at once, each a rank of the run: cpu:N
                          N CPU workers (default cpu = 1), or one worker per listed GPU when
                          a spec says cluster.device "cuda"
  --speed F               emulated compute speed, > 0 (default 1: real speed)
  --bandwidth-mbps F      emulated link bandwidth in Mbit/s, 0 = unlimited (default 0)
  --latency-ms F          emulated link latency per message, >= 0 (default 0)
  --speed-schedule S      the speed from a step on, as STEP:SPEED,... (e.g. 100:0.3,300:1)
  --straggler P:MS        stall for MS milliseconds in a share P of the steps (e.g. 0.05:200)
                          (a job's spec entry, when it has these, goes first)
  --token T               require "authorization: Bearer T" on every call; mandatory
                          when --listen is not a loopback address
  --token-file F          the token from file F (its first line; readable by its owner
                          only: chmod 600), so that ps does not show it; or set the
                          DTLAB_TOKEN environment variable (read, then unset)
  --config FILE           settings from FILE, one "key = value" a line (a flag without
                          its dashes, '_' for '-', e.g. listen = 0.0.0.0:7000,
                          token_file = /etc/dtlab/token, insecure = true; # comments);
                          flags on the command line override them
  --tls-cert F --tls-key F --tls-ca F
                          mutual TLS on every call: this node's certificate and key, and
                          the CA whose clients (and peers) it accepts; replaced files are
                          read again within seconds. Mandatory when --listen is not a
                          loopback address, unless --insecure
  --insecure              serve a non-loopback address in clear text (a private network you
                          trust: the token and every gradient are readable on the wire)
  --threads N             CPU threads of the worker (default 1)
  --name NAME             how the node names itself (default HOSTNAME:PORT)
  --log-level L           error, warn, info or debug (default info)
  --version, --help

gen-certs DIR --hosts HOST,IP,...
  Writes a cluster CA (ca.pem, ca.key; kept if DIR has one), a certificate for the
  daemons (node.pem, node.key) naming every HOST and IP the nodes are dialled at, and
  one for the coordinator (client.pem, client.key). Then, on each node:
    dtlab-node --listen 0.0.0.0:7000 --token T --tls-cert DIR/node.pem \
               --tls-key DIR/node.key --tls-ca DIR/ca.pem
  and to run:  dtlab-cli run SPEC --node HOST:7000 ... --token T \
               --tls-cert DIR/client.pem --tls-key DIR/client.key --tls-ca DIR/ca.pem
)";

// A:B with two numbers, or nullopt.
std::optional<std::pair<double, double>> numberPair(const std::string& text) {
  const std::size_t colon = text.find(':');
  if (colon == std::string::npos) return std::nullopt;
  double a = 0.0, b = 0.0;
  const char* first = text.data();
  const char* mid = first + colon;
  const char* last = first + text.size();
  const auto ra = std::from_chars(first, mid, a);
  const auto rb = std::from_chars(mid + 1, last, b);
  if (colon == 0 || ra.ec != std::errc() || ra.ptr != mid || rb.ec != std::errc() || rb.ptr != last)
    return std::nullopt;
  return std::make_pair(a, b);
}

// --speed-schedule and --straggler, checked by the spec's own rules (its message, the flag's
// name in front).
void parseDrift(const Args& args, dtlab::remote::NodeOptions& options) {
  nlohmann::json entry = nlohmann::json::object();
  if (args.has("--speed-schedule")) {
    const std::string text = args.value("--speed-schedule", "");
    nlohmann::json list = nlohmann::json::array();
    std::size_t begin = 0;
    while (begin <= text.size()) {
      const std::size_t end = std::min(text.find(',', begin), text.size());
      const auto change = numberPair(text.substr(begin, end - begin));
      if (!change || change->first != std::floor(change->first))
        throw UsageError("--speed-schedule: expected STEP:SPEED,... (e.g. 100:0.3,300:1), got '" +
                         text + "'");
      list.push_back({{"at_step", static_cast<int64_t>(change->first)}, {"speed", change->second}});
      begin = end + 1;
    }
    entry["speed_schedule"] = list;
  }
  if (args.has("--straggler")) {
    const std::string text = args.value("--straggler", "");
    const auto straggler = numberPair(text);
    if (!straggler)
      throw UsageError("--straggler: expected PROBABILITY:PAUSE_MS (e.g. 0.05:200), got '" + text +
                       "'");
    entry["straggler"] = {{"probability", straggler->first}, {"pause_ms", straggler->second}};
  }
  try {
    const dtlab::core::NodeConfig node =
        dtlab::core::parseExperimentSpec({{"cluster", {{"nodes", nlohmann::json::array({entry})}}}})
            .cluster.nodes.at(0);
    options.speedSchedule = node.speedSchedule;
    options.straggler = node.straggler;
  } catch (const dtlab::core::SpecError& e) {
    const bool schedule = e.path().find("speed_schedule") != std::string::npos;
    const std::string field = e.path().substr(e.path().rfind('.') + 1);  // at_step, probability...
    throw UsageError(std::string(schedule ? "--speed-schedule" : "--straggler") + ": " + field +
                     " " + e.reason());
  }
}

double number(const Args& args, const std::string& flag, double fallback) {
  if (!args.has(flag)) return fallback;
  const std::string text = args.value(flag, "");
  double v = 0.0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v))
    throw UsageError(flag + ": expected a number, got '" + text + "'");
  return v;
}

int parseSlots(const std::string& devices) {
  if (devices == "cpu") return 1;
  if (devices.rfind("cpu:", 0) == 0) {
    const std::string n = devices.substr(4);
    int slots = 0;
    const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), slots);
    if (ec == std::errc() && end == n.data() + n.size() && slots >= 1 && slots <= 1024)
      return slots;
    throw UsageError("--devices: cpu:N needs N in [1, 1024], got '" + devices + "'");
  }
  throw UsageError("--devices: expected cpu, cpu:N or cuda:N, got '" + devices + "'");
}

// --devices: CPU worker slots, or the GPUs of this daemon's workers (each checked here, so
// that a daemon without them never starts).
void parseDevices(const std::string& devices, dtlab::remote::NodeOptions& options) {
  if (devices.rfind("cuda", 0) != 0) {
    options.slots = parseSlots(devices);
    return;
  }
  std::size_t begin = 0;
  while (begin <= devices.size()) {
    const std::size_t end = std::min(devices.find(',', begin), devices.size());
    const std::string one = devices.substr(begin, end - begin);
    dtlab::core::DeviceDescription gpu;
    try {
      gpu = dtlab::core::describeCudaDevice(one);
    } catch (const dtlab::Error& e) {
      throw UsageError(std::string("--devices: ") + e.what());
    }
    for (const dtlab::core::DeviceDescription& listed : options.gpus)
      if (listed.name == gpu.name)
        throw UsageError("--devices " + devices + ": " + gpu.name + " is listed twice");
    options.gpus.push_back(std::move(gpu));
    begin = end + 1;
  }
}

dtlab::remote::NodeOptions parseOptions(const Args& args) {
  if (!args.positionals().empty()) throw UsageError("unexpected argument " + args.positionals()[0]);
  dtlab::remote::NodeOptions options;
  options.listen = args.value("--listen", options.listen);
  dtlab::remote::HostPort listen;
  try {
    listen = dtlab::remote::parseHostPort(options.listen, "--listen");
  } catch (const dtlab::Error& e) {
    throw UsageError(e.what());
  }
  parseDevices(args.value("--devices", "cpu"), options);
  options.speed = number(args, "--speed", 1.0);
  if (!(options.speed > 0.0))
    throw UsageError("--speed: must be > 0, got " + args.value("--speed", ""));
  options.bandwidthMbps = number(args, "--bandwidth-mbps", 0.0);
  if (options.bandwidthMbps < 0.0)
    throw UsageError("--bandwidth-mbps: must be >= 0 (0 = unlimited), got " +
                     args.value("--bandwidth-mbps", ""));
  options.latencyMs = number(args, "--latency-ms", 0.0);
  if (options.latencyMs < 0.0)
    throw UsageError("--latency-ms: must be >= 0, got " + args.value("--latency-ms", ""));
  parseDrift(args, options);
  options.token = dtlab::app::tokenFromArgs(args);
  options.tls = {args.value("--tls-cert", ""), args.value("--tls-key", ""),
                 args.value("--tls-ca", "")};
  options.insecure = args.has("--insecure");
  try {
    dtlab::remote::checkTlsFiles(options.tls);
  } catch (const dtlab::Error& e) {
    throw UsageError(e.what());
  }
  if (options.insecure && options.tls.enabled())
    throw UsageError("--insecure contradicts --tls-cert/--tls-key/--tls-ca");
  if (options.token.empty() && !dtlab::remote::isLoopbackHost(listen.host))
    throw UsageError("--listen " + options.listen +
                     " is not a loopback address: give a --token so that only your coordinator "
                     "can start jobs on this node");
  options.threads = static_cast<int>(args.integer("--threads", 1, 1, 256));
  options.name = args.value("--name", "");
  if (args.has("--name") && options.name.empty()) throw UsageError("--name: must not be empty");
  options.advertise = args.value("--advertise", "");
  // A host name or an IPv4 address has no colon, an IPv6 address several; one is a port.
  if (args.has("--advertise") &&
      (options.advertise.empty() ||
       std::count(options.advertise.begin(), options.advertise.end(), ':') == 1))
    throw UsageError("--advertise: expected a host name or address without a port, got '" +
                     options.advertise + "'");
  const double connectS = number(args, "--connect-timeout", 30.0);
  if (!(connectS >= 0.1 && connectS <= 3600.0))
    throw UsageError("--connect-timeout: must be in [0.1, 3600] seconds, got " +
                     args.value("--connect-timeout", ""));
  options.connectTimeout = std::chrono::milliseconds(static_cast<int64_t>(connectS * 1000.0));
  try {
    dtlab::setLogLevel(dtlab::parseLogLevel(args.value("--log-level", "info")));
  } catch (const dtlab::Error& e) {
    throw UsageError(std::string("--log-level: ") + e.what());
  }
  return options;
}

// `dtlab-node gen-certs DIR --hosts HOST,...`
int genCerts(const std::vector<std::string>& argv) {
  try {
    const Args args(argv, {"--hosts"}, {});
    if (args.positionals().size() != 1)
      throw UsageError("gen-certs: expected one DIR (dtlab-node gen-certs DIR --hosts HOST,...)");
    std::vector<std::string> hosts;
    const std::string list = args.value("--hosts", "");
    for (std::size_t begin = 0; begin < list.size();) {
      const std::size_t end = std::min(list.find(',', begin), list.size());
      if (end > begin) hosts.push_back(list.substr(begin, end - begin));
      begin = end + 1;
    }
    const auto made = dtlab::remote::generateCertificates(args.positionals()[0], hosts);
    std::cout << (made.newCa ? "new CA" : "kept the CA") << " in " << made.dir << "/ca.pem\n"
              << "node certificate " << made.dir << "/node.pem for " << list << "\n"
              << "client certificate " << made.dir << "/client.pem\n";
    return 0;
  } catch (const UsageError& e) {
    std::cerr << "dtlab-node: " << e.what() << "\n";
    return 2;
  } catch (const dtlab::Error& e) {
    std::cerr << "dtlab-node: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  dtlab::core::keepLargeAllocationsInTheHeap();
  const std::vector<std::string> argvList(argv + 1, argv + argc);
  if (!argvList.empty() && argvList.front() == "gen-certs")
    return genCerts({argvList.begin() + 1, argvList.end()});
  dtlab::remote::NodeOptions options;
  try {
    const std::set<std::string> valueFlags = {
        "--listen",         "--devices",   "--speed",     "--bandwidth-mbps",  "--latency-ms",
        "--speed-schedule", "--straggler", "--token",     "--token-file",      "--threads",
        "--name",           "--log-level", "--advertise", "--connect-timeout", "--tls-cert",
        "--tls-key",        "--tls-ca"};
    const std::set<std::string> switches = {"--insecure"};
    // --config FILE: the file's settings first, so that the command line overrides them.
    std::set<std::string> withConfig = valueFlags;
    withConfig.insert("--config");
    std::set<std::string> allSwitches = switches;
    allSwitches.insert({"--help", "--version"});
    std::vector<std::string> all = argvList;
    if (const Args first(argvList, withConfig, allSwitches); first.has("--config")) {
      // No token in a configuration file: token_file, readable by the daemon's user only.
      std::set<std::string> fileFlags = valueFlags;
      fileFlags.erase("--token");
      all = dtlab::app::configArguments(first.value("--config", ""), fileFlags, switches);
      for (const std::string& a : argvList) all.push_back(a);
    }
    const Args args(all, withConfig, allSwitches);
    if (args.has("--help")) {
      std::cout << kUsage;
      return 0;
    }
    if (args.has("--version")) {
      std::cout << "dtlab-node " << DTLAB_VERSION << "\n";
      for (const std::string& library : dtlab::remote::libraryVersions())
        std::cout << "  " << library << "\n";
      return 0;
    }
    options = parseOptions(args);
  } catch (const UsageError& e) {
    std::cerr << "dtlab-node: " << e.what() << "\n(dtlab-node --help lists the options)\n";
    return 2;
  }

  // Signals are taken by sigwait() below, never by a handler: block them before any thread
  // exists so that every thread (gRPC's, the jobs') inherits the mask.
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGTERM);
  sigaddset(&stopSignals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a launcher that closed our stdout must not kill us

  dtlab::setLogSource("dtlab-node[" + (options.name.empty() ? std::string("node") : options.name) +
                      "]");
  // This daemon dials its peers' rendezvous and parameter-server services with its own
  // certificate.
  dtlab::remote::setClientTls(options.tls);
  std::unique_ptr<dtlab::remote::NodeServer> server;
  try {
    server = std::make_unique<dtlab::remote::NodeServer>(options);
  } catch (const std::exception& e) {
    std::cerr << "dtlab-node: " << e.what() << "\n";
    return 1;
  }
  if (options.name.empty()) dtlab::setLogSource("dtlab-node[" + server->name() + "]");
  std::cout << "dtlab-node listening on " << server->address() << std::endl;

  int signalNumber = 0;
  while (sigwait(&stopSignals, &signalNumber) != 0) {
  }
  dtlab::logAt(dtlab::LogLevel::kInfo, "received ", signalNumber == SIGTERM ? "SIGTERM" : "SIGINT");
  if (!server->shutdown()) {
    // The job thread is stuck (e.g. waiting for peers); its destructor would wait for it.
    std::fflush(nullptr);
    std::_Exit(0);
  }
  server.reset();
  return 0;
}
