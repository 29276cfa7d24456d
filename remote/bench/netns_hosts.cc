#include "remote/bench/netns_hosts.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/common/check.h"
#include "remote/bench/rank_processes.h"

namespace dtlab::bench {
namespace {

// Runs `ip ARGS...`; throws with what it said when it fails.
void ip(const std::vector<std::string>& args) {
  std::string command = "ip";
  for (const std::string& a : args) command += " '" + a + "'";
  command += " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) throw Error("cannot run: " + command);
  std::string said;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) said += buffer;
  const int status = pclose(pipe);
  if (status != 0) throw Error(command.substr(0, command.size() - 5) + ": " + said);
}

std::string address(int i) {
  return "10.214.0." + std::to_string(10 + i);
}

}  // namespace

NetnsHosts::NetnsHosts(int hosts, const std::filesystem::path& node, const std::string& token)
    : prefix_("dtlabp" + std::to_string(::getpid())),
      logs_(std::filesystem::temp_directory_path() / (prefix_ + "-logs")) {
  if (::geteuid() != 0)
    throw Error("--netns needs root: network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN");
  if (!std::filesystem::exists(node)) throw Error("--netns: no dtlab-node at " + node.string());
  try {
    hub_ = prefix_ + "-hub";
    ip({"netns", "add", hub_});
    namespaces_.push_back(hub_);
    const std::vector<std::string> inHub = {"netns", "exec", hub_, "ip"};
    auto hubIp = [&](std::vector<std::string> args) {
      std::vector<std::string> all = inHub;
      all.insert(all.end(), args.begin(), args.end());
      ip(all);
    };
    hubIp({"link", "set", "lo", "up"});
    hubIp({"link", "add", "br0", "type", "bridge"});
    hubIp({"addr", "add", "10.214.0.254/24", "dev", "br0"});
    hubIp({"link", "set", "br0", "up"});
    std::filesystem::create_directories(logs_);
    for (int i = 0; i < hosts; ++i) {
      const std::string ns = prefix_ + "-h" + std::to_string(i);
      ip({"netns", "add", ns});
      namespaces_.push_back(ns);
      std::string inside = "v", outside = "b";
      inside.append(std::to_string(i));
      outside.append(std::to_string(i));
      ip({"link", "add", inside, "netns", ns, "type", "veth", "peer", "name", outside, "netns",
          hub_});
      ip({"netns", "exec", ns, "ip", "link", "set", "lo", "up"});
      ip({"netns", "exec", ns, "ip", "addr", "add", address(i) + "/24", "dev", inside});
      ip({"netns", "exec", ns, "ip", "link", "set", inside, "up"});
      hubIp({"link", "set", outside, "master", "br0"});
      hubIp({"link", "set", outside, "up"});
      // The daemon, its output to a log read for its "listening" line.
      const std::filesystem::path log = logs_ / (ns + ".log");
      const std::string listen = address(i) + ":7000";
      // Plain text: the bridge joins namespaces of this one machine, nothing leaves it.
      const pid_t pid = spawnProcess({"ip", "netns", "exec", ns, node.string(), "--listen", listen,
                                      "--token", token, "--insecure"},
                                     log, /*withStderr=*/true);
      daemons_.push_back(pid);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      for (;;) {
        std::ifstream in(log);
        std::stringstream text;
        text << in.rdbuf();
        if (text.str().find("dtlab-node listening on ") != std::string::npos) break;
        if (std::chrono::steady_clock::now() > deadline)
          throw Error("dtlab-node in " + ns + " did not start: " + text.str());
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
  } catch (...) {
    tearDown();
    throw;
  }
}

NetnsHosts::~NetnsHosts() {
  tearDown();
}

std::string NetnsHosts::daemon(int i) const {
  return address(i) + ":7000";
}

void NetnsHosts::tearDown() noexcept {
  for (pid_t pid : daemons_) ::kill(pid, SIGTERM);
  for (pid_t pid : daemons_) {
    int status = 0;
    for (int tries = 0; tries < 50 && ::waitpid(pid, &status, WNOHANG) == 0; ++tries)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, WNOHANG);
  }
  daemons_.clear();
  for (auto it = namespaces_.rbegin(); it != namespaces_.rend(); ++it) {
    try {
      ip({"netns", "del", *it});
    } catch (const std::exception&) {
    }
  }
  namespaces_.clear();
  std::error_code ec;
  std::filesystem::remove_all(logs_, ec);
}

}  // namespace dtlab::bench
