#include "remote/common/versions.h"

#include <google/protobuf/stubs/common.h>
#include <grpcpp/grpcpp.h>

#include "core/common/versions.h"

namespace dtlab::remote {

std::vector<std::string> libraryVersions() {
  std::vector<std::string> versions = core::libraryVersions();
  versions.push_back("gRPC " + grpc::Version());
  versions.push_back("protobuf " +
                     google::protobuf::internal::VersionString(GOOGLE_PROTOBUF_VERSION));
  return versions;
}

}  // namespace dtlab::remote
