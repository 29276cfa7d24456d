// The CUDA plugin loader (core/backend/cuda_plugin.h): the programs link no CUDA library and
// load libdtlab_cuda.so when a CUDA device is asked for. Every way of not having it (no file,
// not a shared library, not a DTLab plugin, another DTLab version) is refused with a message
// naming the file, and a program still runs on the CPU. In a build with CUDA the build tree's
// plugin is found beside the programs and answers for the devices, GPU or none.
#include <QtTest/QtTest>

#include <QtCore/QProcess>
#include <QtCore/QTemporaryDir>

#include <dlfcn.h>

#include <fstream>
#include <string>

#include "core/backend/backend.h"
#include "core/backend/cuda_plugin.h"
#include "core/common/check.h"
#include "core/common/config.h"

using namespace dtlab;
using namespace dtlab::core;

namespace {

const std::string kBuildPlugin = DTLAB_BINARY_DIR "/lib/dtlab/libdtlab_cuda.so";
const QString kNode = DTLAB_BINARY_DIR "/app/dtlab-node";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// What `dtlab-node --devices cuda:0` says on stderr with DTLAB_CUDA_PLUGIN=plugin, and its
// exit code.
std::pair<int, QString> nodeWithPlugin(const QString& plugin) {
  QProcess node;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("DTLAB_CUDA_PLUGIN", plugin);
  node.setProcessEnvironment(env);
  node.start(kNode, {"--devices", "cuda:0"});
  if (!node.waitForFinished(30000)) return {-1, "did not finish"};
  return {node.exitCode(), node.readAllStandardError()};
}

}  // namespace

class TestCudaPlugin : public QObject {
  Q_OBJECT
 private slots:
  void aMissingFileIsNamed() {
    const CudaPluginLoad load = loadCudaPlugin("/nonexistent/dir/libdtlab_cuda.so");
    QVERIFY(load.plugin == nullptr);
    QVERIFY2(contains(load.why, "no CUDA plugin at /nonexistent/dir/libdtlab_cuda.so"),
             load.why.c_str());
    QVERIFY2(contains(load.why, "dtlab-cuda package"), load.why.c_str());
  }

  void aFileThatIsNoLibraryIsRefused() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("libdtlab_cuda.so").toStdString();
    std::ofstream(path) << "not a shared library\n";
    const CudaPluginLoad load = loadCudaPlugin(path);
    QVERIFY(load.plugin == nullptr);
    QVERIFY2(contains(load.why, "cannot load the CUDA plugin") && contains(load.why, path),
             load.why.c_str());
  }

  void aLibraryWithoutTheEntryIsNoPlugin() {
    const CudaPluginLoad load = loadCudaPlugin(DTLAB_NOT_A_PLUGIN);
    QVERIFY(load.plugin == nullptr);
    QVERIFY2(contains(load.why, std::string(DTLAB_NOT_A_PLUGIN) +
                                    " is not a DTLab CUDA plugin (no dtlab_cuda_plugin symbol)"),
             load.why.c_str());
  }

  // The program's own plugin: in a build with CUDA, the build tree's, found from the program's
  // directory; without, the reason names where it was looked for. Either way "cuda" is listed
  // with a reason or enabled, and the CPU backend works.
  void theProgramsPluginIsFoundBesideIt() {
    const CudaPluginLoad& load = cudaPlugin();
    QCOMPARE(QString::fromStdString(load.path), QString::fromStdString(kBuildPlugin));
    if (DTLAB_HAVE_CUDA) {
      QVERIFY2(load.plugin != nullptr, load.why.c_str());
      const CudaDevices devices = load.plugin->devices();
      QCOMPARE(cudaDeviceCount(), devices.count);
      if (devices.count == 0) {
        // No GPU here: the runtime's reason, through the plugin, on every path that asks.
        QVERIFY2(contains(devices.why, "no CUDA device"), devices.why.c_str());
        try {
          makeBackend("cuda:0", 1);
          QFAIL("made a cuda backend without a GPU");
        } catch (const Error& e) {
          QVERIFY2(contains(e.what(), "no CUDA device"), e.what());
        }
      }
    } else {
      QVERIFY(load.plugin == nullptr);
      QVERIFY2(contains(load.why, "no CUDA plugin at " + kBuildPlugin), load.why.c_str());
      QCOMPARE(cudaDeviceCount(), 0);
      try {
        makeBackend("cuda", 1);
        QFAIL("made a cuda backend without the plugin");
      } catch (const Error& e) {
        QVERIFY2(contains(e.what(), "device 'cuda' is not available: no CUDA plugin"), e.what());
      }
    }
    const auto backends = availableBackends();
    QCOMPARE(backends.front().name, std::string("cuda"));
    QCOMPARE(backends.front().enabled, cudaDeviceCount() > 0);
    if (!backends.front().enabled) QVERIFY(!backends.front().why.empty());
    QVERIFY(makeBackend("cpu", 1) != nullptr);
  }

  // The real plugin's entry point refuses a program of another version: it would run on that
  // program's copy of the core, built from other sources.
  void thePluginRefusesAnotherVersion() {
    if (!DTLAB_HAVE_CUDA) QSKIP("built without CUDA: no plugin to ask");
    void* handle = dlopen(kBuildPlugin.c_str(), RTLD_NOW | RTLD_LOCAL);
    QVERIFY2(handle != nullptr, dlerror());
    auto entry = reinterpret_cast<CudaPluginEntry>(dlsym(handle, kCudaPluginEntry));
    QVERIFY(entry != nullptr);
    const char* why = nullptr;
    QVERIFY(entry("0.0.0-elsewhere", &why) == nullptr);
    QCOMPARE(QString(why), QString("the plugin is from DTLab " DTLAB_VERSION));
    QVERIFY(entry(DTLAB_VERSION, &why) != nullptr);
    dlclose(handle);
  }

  // A user's view: the daemon asked for a GPU says why it cannot have one, naming the plugin
  // file DTLAB_CUDA_PLUGIN points at, and does not start.
  void theDaemonSaysWhichPluginItCouldNotUse() {
    const auto [code, err] = nodeWithPlugin("/nonexistent/libdtlab_cuda.so");
    QCOMPARE(code, 2);
    QVERIFY2(err.contains("device 'cuda:0' is not available: no CUDA plugin at "
                          "/nonexistent/libdtlab_cuda.so"),
             qPrintable(err));
    const auto [code2, err2] = nodeWithPlugin(DTLAB_NOT_A_PLUGIN);
    QCOMPARE(code2, 2);
    QVERIFY2(err2.contains("is not a DTLab CUDA plugin"), qPrintable(err2));
  }
};

QTEST_GUILESS_MAIN(TestCudaPlugin)
#include "test_cuda_plugin.moc"
