#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace dtlab {

// Base of every error DTLab throws on purpose. Anything else escaping is a bug.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A broken invariant inside DTLab: carries file, line and the failed condition.
class EnforceError : public Error {
 public:
  using Error::Error;
};

namespace detail {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}
[[noreturn]] void throwEnforce(const char* file, int line, const char* condition,
                               const std::string& context);
}  // namespace detail

}  // namespace dtlab

// DTLAB_ENFORCE(cond, "context", value, ...): throws EnforceError naming file, line, the
// condition and the streamed context when cond is false.
#define DTLAB_ENFORCE(cond, ...)                                                             \
  do {                                                                                       \
    if (!(cond)) [[unlikely]]                                                                \
      ::dtlab::detail::throwEnforce(__FILE__, __LINE__, #cond,                               \
                                    ::dtlab::detail::concat("" __VA_OPT__(, ) __VA_ARGS__)); \
  } while (0)

// DTLAB_ENFORCE_EQ(a, b, "context"): as DTLAB_ENFORCE, and prints both values.
#define DTLAB_ENFORCE_EQ(a, b, ...)                                                              \
  do {                                                                                           \
    const auto& dtlab_a_ = (a);                                                                  \
    const auto& dtlab_b_ = (b);                                                                  \
    if (!(dtlab_a_ == dtlab_b_)) [[unlikely]]                                                    \
      ::dtlab::detail::throwEnforce(                                                             \
          __FILE__, __LINE__, #a " == " #b,                                                      \
          ::dtlab::detail::concat(dtlab_a_, " vs ", dtlab_b_ __VA_OPT__(, ": ", ) __VA_ARGS__)); \
  } while (0)
