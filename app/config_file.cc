#include "app/config_file.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "app/args.h"
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

std::string readSecretFile(const std::string& path, const std::string& flag) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0)
    throw UsageError(flag + " " + path + ": cannot read it (no such file, or no permission)");
  if ((info.st_mode & (S_IRWXG | S_IRWXO)) != 0)
    throw UsageError(flag + " " + path +
                     ": other users may read it (its mode gives group or others access); "
                     "chmod 600 it, owned by the user this program runs as");
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
