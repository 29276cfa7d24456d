#include "core/spec/experiment_spec.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>
#include <string_view>

namespace dtlab::core {

using detail::concat;

std::string nodeAddressProblem(std::string_view address) {
  constexpr size_t kMaxAddressBytes = 255;
  const std::string quoted = concat('\'', address.substr(0, 64), '\'');
  const char* expected = " (expected HOST:PORT, e.g. node1:7070 or [fe80::1]:7070)";
  if (address.empty()) return std::string("must be HOST:PORT of a running dtlab-node, got \"\"");
  if (address.size() > kMaxAddressBytes)
    return concat("at most ", kMaxAddressBytes, " bytes, got ", address.size());
  for (char ch : address)
    if (std::isspace(static_cast<unsigned char>(ch)) ||
        std::iscntrl(static_cast<unsigned char>(ch)))
      return "must not contain spaces or control characters, got " + quoted;
  if (address.find("://") != std::string_view::npos)
    return "give HOST:PORT without a scheme, got " + quoted + expected;
  std::string_view host;
  std::string_view port;
  if (address.front() == '[') {
    const size_t close = address.find(']');
    if (close == std::string_view::npos) return "unclosed '[' in " + quoted + expected;
    host = address.substr(1, close - 1);
    if (close + 1 >= address.size() || address[close + 1] != ':')
      return "missing :PORT after the bracketed host in " + quoted + expected;
    port = address.substr(close + 2);
    const bool hexOrColon = std::all_of(host.begin(), host.end(), [](char ch) {
      return std::isxdigit(static_cast<unsigned char>(ch)) || ch == ':' || ch == '.';
    });
    if (host.empty()) return "missing host name in " + quoted + expected;
    if (!hexOrColon || host.find(':') == std::string_view::npos)
      return "brackets hold an IPv6 address, got " + quoted + expected;
  } else {
    const size_t colon = address.rfind(':');
    if (colon == std::string_view::npos) return "missing :PORT in " + quoted + expected;
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
    if (host.empty()) return "missing host name in " + quoted + expected;
    if (host.find(':') != std::string_view::npos)
      return "an IPv6 address goes in brackets, as [ADDRESS]:PORT, got " + quoted;
    const bool nameCharacters = std::all_of(host.begin(), host.end(), [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '.' || ch == '_';
    });
    if (!nameCharacters)
      return "the host may hold letters, digits, '-', '.' and '_' only, got " + quoted;
  }
  int value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value < 1 ||
      value > 65535)
    return "the port must be an integer in 1..65535, got " + quoted;
  return {};
}

}  // namespace dtlab::core
