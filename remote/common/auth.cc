#include "remote/common/auth.h"

#include <arpa/inet.h>

#include <charconv>
#include <cstring>

#include "core/common/check.h"

namespace dtlab::remote {

bool constantTimeEquals(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const std::size_t n = a.size() < b.size() ? a.size() : b.size();
  for (std::size_t i = 0; i < n; ++i)
    diff |= static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i]);
  return diff == 0;
}

grpc::Status checkBearerToken(const grpc::ServerContextBase& context,
                              const std::string& expectedToken) {
  if (expectedToken.empty()) return grpc::Status::OK;
  const auto& metadata = context.client_metadata();
  const auto range = metadata.equal_range(kAuthorizationKey);
  if (range.first == range.second)
    return {grpc::StatusCode::UNAUTHENTICATED,
            "this node requires a token: send metadata 'authorization: Bearer <token>' "
            "(dtlab-cli --token)"};
  for (auto it = range.first; it != range.second; ++it) {
    const std::string_view value(it->second.data(), it->second.size());
    if (value.substr(0, kBearerPrefix.size()) == kBearerPrefix &&
        constantTimeEquals(value.substr(kBearerPrefix.size()), expectedToken))
      return grpc::Status::OK;
  }
  return {grpc::StatusCode::UNAUTHENTICATED,
          "the token does not match the one this node was started with (--token)"};
}

HostPort parseHostPort(std::string_view text, std::string_view what) {
  const auto fail = [&](const std::string& why) {
    throw Error(std::string(what) + ": expected HOST:PORT, " + why + " in '" + std::string(text) +
                "'");
  };
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) fail("no host or no port");
  std::string_view host = text.substr(0, colon);
  const std::string_view portText = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host.empty()) fail("empty host");
  int port = -1;
  const auto [end, ec] = std::from_chars(portText.data(), portText.data() + portText.size(), port);
  if (ec != std::errc() || end != portText.data() + portText.size() || port < 0 || port > 65535)
    fail("port must be an integer in [0, 65535]");
  return {std::string(host), port};
}

bool isLoopbackHost(std::string_view host) {
  if (host == "localhost") return true;
  const std::string h(host);
  in_addr v4{};
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1)
    return (ntohl(v4.s_addr) >> 24) == 127;  // 127.0.0.0/8
  in6_addr v6{};
  if (inet_pton(AF_INET6, h.c_str(), &v6) == 1) return std::memcmp(&v6, &in6addr_loopback, 16) == 0;
  return false;
}

}  // namespace dtlab::remote
