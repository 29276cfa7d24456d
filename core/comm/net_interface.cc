#include "core/comm/net_interface.h"

#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>
#include <memory>

namespace dtlab::core {
namespace {

bool sameAddress(const sockaddr* a, const sockaddr* b) {
  if (a == nullptr || b == nullptr || a->sa_family != b->sa_family) return false;
  if (a->sa_family == AF_INET) {
    const auto* x = reinterpret_cast<const sockaddr_in*>(a);
    const auto* y = reinterpret_cast<const sockaddr_in*>(b);
    return x->sin_addr.s_addr == y->sin_addr.s_addr;
  }
  if (a->sa_family == AF_INET6) {
    const auto* x = reinterpret_cast<const sockaddr_in6*>(a);
    const auto* y = reinterpret_cast<const sockaddr_in6*>(b);
    return std::memcmp(&x->sin6_addr, &y->sin6_addr, sizeof x->sin6_addr) == 0;
  }
  return false;
}

}  // namespace

std::string interfaceHolding(const std::string& host) {
  if (host.empty()) return {};
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* resolved = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &resolved) != 0) return {};
  const std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> addresses(resolved, freeaddrinfo);
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return {};
  const std::unique_ptr<ifaddrs, decltype(&freeifaddrs)> interfaces(list, freeifaddrs);
  for (const addrinfo* a = addresses.get(); a != nullptr; a = a->ai_next) {
    for (const ifaddrs* i = interfaces.get(); i != nullptr; i = i->ifa_next) {
      if (sameAddress(a->ai_addr, i->ifa_addr)) return i->ifa_name;
    }
  }
  return {};
}

}  // namespace dtlab::core
