#pragma once

#include <string>

namespace dtlab::core {

// The name of this machine's network interface ("eth0", "lo") that holds `host`'s address:
// a numeric IPv4 or IPv6 address, or a name, resolved (the first address an interface holds
// wins). Empty when the host does not resolve or no interface holds its addresses. NCCL,
// which picks its own interface, is pinned to this one (NcclOptions::interfaceAddress).
std::string interfaceHolding(const std::string& host);

}  // namespace dtlab::core
