#pragma once

#include <set>
#include <string>
#include <vector>

namespace dtlab::app {

class Args;

// A daemon's configuration file (/etc/dtlab/node.conf for the packaged service) as the
// command-line flags it stands for, to be placed before the real ones (the last value of a
// flag wins, so the command line overrides the file):
//
//   # comment (to the end of the line; blank lines are skipped)
//   listen = 0.0.0.0:7000
//   token_file = /etc/dtlab/token
//   insecure = false
//
// A key is a flag without its dashes, '_' for '-'; a switch takes true or false. An unknown
// or repeated key, a missing '=', a value for a flag given as empty, or an unreadable file
// throws UsageError naming FILE:LINE.
std::vector<std::string> configArguments(const std::string& path,
                                         const std::set<std::string>& valueFlags,
                                         const std::set<std::string>& switches);

// The secret in the file at `path` (a token), without its trailing newline and blanks. The
// file must be readable by its owner only (no group or other permission bits: chmod 600), as
// a token on a command line would be readable by every user through ps. UsageError naming
// `flag` and the path otherwise, or when the file is empty.
std::string readSecretFile(const std::string& path, const std::string& flag);

// The token a command was given: --token T, --token-file F (readSecretFile), or the
// DTLAB_TOKEN environment variable, which is read once and removed from the environment (the
// processes this one starts do not inherit it). Empty when none. --token T is visible to
// every account on the machine in the process list: where other accounts exist, a warning on
// stderr says so and names the other two ways. UsageError when two are given, or an empty one.
std::string tokenFromArgs(const Args& args);

}  // namespace dtlab::app
