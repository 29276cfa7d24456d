#pragma once

// Why the GPU cases of tests/gpu cannot run here, and the skip that says so.

#include <QtTest/QtTest>

#include <string>

#include "core/backend/backend.h"

namespace dtlab::test {

// Empty when a CUDA device is there, else the reason (built without CUDA, no driver, no GPU).
inline std::string whyNoGpu() {
  for (const core::BackendInfo& info : core::availableBackends())
    if (info.name == "cuda") return info.enabled ? std::string() : info.why;
  return "no cuda backend listed";
}

}  // namespace dtlab::test

#define SKIP_WITHOUT_GPU()                                                                 \
  do {                                                                                     \
    const std::string why = ::dtlab::test::whyNoGpu();                                     \
    if (!why.empty())                                                                      \
      QSKIP(qPrintable(QString("GPU test skipped: %1").arg(QString::fromStdString(why)))); \
  } while (0)
