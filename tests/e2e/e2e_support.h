#pragma once
// What the e2e suites share: where the binaries are, and specs written as a user would.

#include <QtCore/QFile>
#include <QtCore/QProcess>
#include <QtCore/QString>
#include <QtCore/QStringList>
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

// What a finished dtlab-cli said.
struct Outcome {
  int exitCode = -1;  // -1: it crashed or timed out
  QString out;
  QString err;
};

// Runs dtlab-cli with args and waits for it (killing it after timeoutMs).
inline Outcome cli(const QStringList& args, int timeoutMs = 60000) {
  QProcess p;
  p.start(kCli, args);
  Outcome o;
  if (!p.waitForFinished(timeoutMs)) {
    p.kill();
    p.waitForFinished();
    o.err = "timed out";
    return o;
  }
  o.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  o.out = QString::fromUtf8(p.readAllStandardOutput());
  o.err = QString::fromUtf8(p.readAllStandardError());
  return o;
}

}  // namespace dtlab::e2e
