// The fuzz targets outside a fuzzing build: runs every file of the directories given (the
// seed corpus, then the findings kept as regression cases) through LLVMFuzzerTestOneInput
// once, in name order. A finding aborts the process, naming the file; a seed directory with
// no file fails too, so the case cannot pass by running nothing.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// Optional, as in libFuzzer: called once before the first input.
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s SEED_DIR [FINDINGS_DIR...]\n", argv[0]);
    return 2;
  }
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  int ran = 0;
  for (int a = 1; a < argc; ++a) {
    const fs::path dir = argv[a];
    std::error_code error;
    if (!fs::is_directory(dir, error)) {
      if (a == 1) {
        std::fprintf(stderr, "no seed directory %s\n", dir.c_str());
        return 1;
      }
      continue;  // no findings kept for this target
    }
    std::vector<fs::path> files;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir))
      if (entry.is_regular_file()) files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    if (a == 1 && files.empty()) {
      std::fprintf(stderr, "the seed directory %s holds no file\n", dir.c_str());
      return 1;
    }
    for (const fs::path& file : files) {
      std::ifstream in(file, std::ios::binary);
      const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                    std::istreambuf_iterator<char>());
      std::fprintf(stderr, "%s (%zu bytes)\n", file.c_str(), bytes.size());
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++ran;
    }
  }
  std::fprintf(stderr, "%d inputs ran without a finding\n", ran);
  return 0;
}
