#pragma once
// What the e2e suites share: where the binaries are, and specs written as a user would.

#include <QtCore/QFile>
#include <QtCore/QString>
#include <QtCore/QTemporaryDir>

#include <string>

#include <nlohmann/json.hpp>

#include "core/spec/experiment_spec.h"

namespace dtlab::e2e {

inline const std::string kNode = DTLAB_BINARY_DIR "/app/dtlab-node";
inline const QString kCli = DTLAB_BINARY_DIR "/app/dtlab-cli";

// Writes the spec as JSON into dir/spec.json and returns the path.
inline QString writeSpec(const QTemporaryDir& dir, const core::ExperimentSpec& spec) {
  const QString path = dir.filePath("spec.json");
  QFile file(path);
  if (file.open(QIODevice::WriteOnly))
    file.write(QByteArray::fromStdString(core::toJson(spec).dump()));
  return path;
}

}  // namespace dtlab::e2e
