#include "app/config_file.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "app/args.h"
#include "core/common/owner_only.h"
#include "core/common/text_lines.h"

namespace dtlab::app {
namespace {

std::string keysOf(const std::set<std::string>& valueFlags, const std::set<std::string>& switches) {
  std::string out;
  for (const std::set<std::string>* set : {&valueFlags, &switches})
    for (const std::string& flag : *set) {
      std::string key = flag.substr(2);
      for (char& c : key)
        if (c == '-') c = '_';
      out += (out.empty() ? "" : ", ") + key;
    }
  return out;
}

}  // namespace

std::vector<std::string> configArguments(const std::string& path,
                                         const std::set<std::string>& valueFlags,
                                         const std::set<std::string>& switches) {
  std::ifstream in(path);
  if (!in) throw UsageError(path + ": cannot read the configuration file");
  std::ostringstream text;
  text << in.rdbuf();
  std::vector<std::string> arguments;
  std::set<std::string> seen;
  forEachContentLine(text.str(), [&](int number, std::string_view line) {
    const std::string where = path + ":" + std::to_string(number) + ": ";
    const auto equals = line.find('=');
    if (equals == std::string_view::npos)
      throw UsageError(where + "expected KEY = VALUE, got '" + std::string(line) + "'");
    const std::string key(trimBlanks(line.substr(0, equals)));
    const std::string value(trimBlanks(line.substr(equals + 1)));
    std::string flag = "--" + key;
    for (std::size_t i = 2; i < flag.size(); ++i)
      if (flag[i] == '_') flag[i] = '-';
    if (!seen.insert(flag).second) throw UsageError(where + key + " is given twice");
    if (switches.count(flag) != 0) {
      if (value == "true") {
        arguments.push_back(flag);
      } else if (value != "false") {
        throw UsageError(where + key + " must be true or false, got '" + value + "'");
      }
    } else if (valueFlags.count(flag) != 0) {
      if (value.empty()) throw UsageError(where + key + " has no value");
      arguments.push_back(flag);
      arguments.push_back(value);
    } else {
      throw UsageError(where + "unknown key '" + key + "' (known: " + keysOf(valueFlags, switches) +
                       ")");
    }
  });
  return arguments;
}

namespace {

// Accounts other than this process's user that could log in and run ps: users with a uid of
// 1000 or more (Debian's range for people), nobody excepted, and root when this is not root.
int otherAccounts() {
  std::ifstream passwd("/etc/passwd");
  const auto self = static_cast<long>(::geteuid());
  int others = 0;
  for (std::string line; std::getline(passwd, line);) {
    // name:password:uid:...
    const std::size_t a = line.find(':');
    const std::size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    const std::size_t c = b == std::string::npos ? b : line.find(':', b + 1);
    if (c == std::string::npos) continue;
    char* end = nullptr;
    const long uid = std::strtol(line.c_str() + b + 1, &end, 10);
    if (end != line.c_str() + c || uid == self || uid == 65534) continue;
    if (uid >= 1000 || uid == 0) ++others;
  }
  return others;
}

}  // namespace

std::string tokenFromArgs(const Args& args) {
  int given = 0;
  std::string token;
  if (args.has("--token")) {
    ++given;
    token = args.value("--token", "");
    if (token.empty()) throw UsageError("--token: must not be empty");
    if (const int others = otherAccounts(); others > 0)
      std::fprintf(stderr,
                   "warning: --token is visible to the %d other account%s on this machine in "
                   "the process list (ps); use --token-file F (readable by you only) or the "
                   "DTLAB_TOKEN environment variable\n",
                   others, others == 1 ? "" : "s");
  }
  if (args.has("--token-file")) {
    ++given;
    token = readSecretFile(args.value("--token-file", ""), "--token-file");
  }
  if (const char* env = std::getenv("DTLAB_TOKEN"); env != nullptr) {
    const std::string fromEnv = env;
    ::unsetenv("DTLAB_TOKEN");
    if (given == 0) {
      if (fromEnv.empty()) throw UsageError("DTLAB_TOKEN: set but empty");
      token = fromEnv;
    }
    ++given;
  }
  if (given > 1)
    throw UsageError(
        "--token, --token-file and DTLAB_TOKEN: give one (--token-file or DTLAB_TOKEN keeps it "
        "out of ps)");
  return token;
}

std::string readSecretFile(const std::string& path, const std::string& flag) {
  const std::string problem = core::notOwnerOnly(path);
  if (!problem.empty()) throw UsageError(flag + " " + path + ": " + problem);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(flag + " " + path + ": cannot read it");
  std::ostringstream text;
  text << in.rdbuf();
  std::string secret = text.str();
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r' ||
                             secret.back() == ' ' || secret.back() == '\t'))
    secret.pop_back();
  if (secret.empty()) throw UsageError(flag + " " + path + ": the file is empty");
  return secret;
}

}  // namespace dtlab::app
