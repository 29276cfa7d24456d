#pragma once
// Real network hosts on this machine for `dtlab-cli bench predict --netns`: one network
// namespace per host, joined by veth pairs on a bridge in a namespace of its own (the hub, from
// which the run is driven), a dtlab-node daemon in each host. Host i is at 10.214.0.(10+i).
// Needs root and iproute2 (`ip`); the constructor throws saying why when it cannot. Everything
// (daemons, namespaces and their links) goes on destruction.
#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace dtlab::bench {

class NetnsHosts {
 public:
  // `hosts` namespaces, each with a daemon (`node`, the dtlab-node binary) started with `token`.
  NetnsHosts(int hosts, const std::filesystem::path& node, const std::string& token);
  ~NetnsHosts();
  NetnsHosts(const NetnsHosts&) = delete;
  NetnsHosts& operator=(const NetnsHosts&) = delete;

  // The namespace to drive runs from, and host i's daemon as "address:port".
  const std::string& hub() const { return hub_; }
  std::string daemon(int i) const;

 private:
  void tearDown() noexcept;
  std::string prefix_;
  std::string hub_;
  std::vector<std::string> namespaces_;  // created, to delete
  std::vector<pid_t> daemons_;
  std::filesystem::path logs_;
};

}  // namespace dtlab::bench
