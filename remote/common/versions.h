#pragma once

#include <string>
#include <vector>

namespace dtlab::remote {

// core::libraryVersions() and the RPC stack's: gRPC (at run time) and protobuf. Declared
// without gRPC headers, so the GUI can show them.
std::vector<std::string> libraryVersions();

}  // namespace dtlab::remote
