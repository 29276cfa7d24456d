#pragma once
// What the e2e suites share: where the binaries are, and specs written as a user would.

#include <QtCore/QFile>
#include <QtCore/QProcess>
#include <QtCore/QString>
#include <QtCore/QStringList>
#include <QtCore/QTemporaryDir>

#include <chrono>
#include <exception>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "core/store/project_store.h"

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

// Whether a run recorded into the project at `path` (dtlab-cli ... --project) has a worker's
// step point committed within `timeout`: the run is under way. The project may not exist yet
// (dtlab-cli creates it when the run starts); each try opens it read-only, beside the writer.
inline bool waitForStepPoint(const QString& path, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (QFile::exists(path)) {
      try {
        auto store = core::ProjectStore::open(path.toStdString(), true);
        for (const core::RunRecord& run : store->runs())
          for (const core::SeriesInfo& series : store->series(run.id))
            if (series.worker != core::kNoWorker && series.count > 0) return true;
      } catch (const std::exception&) {
        // Caught between the writer's steps (e.g. the schema not there yet): try again.
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// What a finished dtlab-cli said.
struct Outcome {
  int exitCode = -1;  // -1: it crashed or timed out
  QString out;
  QString err;
};

// The JSON object a dtlab-cli command prints as its last line of stdout.
inline nlohmann::json lastJson(const QString& out) {
  return nlohmann::json::parse(out.trimmed().split('\n').last().toStdString());
}

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
