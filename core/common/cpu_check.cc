// The CPU check of the programs: a program compiled for a CPU with more instruction-set
// extensions than the one running it (-march=native on another machine, or a package on a CPU
// older than x86-64-v3) stops at once with a message naming what is missing, rather than dying
// on an illegal instruction somewhere later. It runs as the program's first constructor, before
// any C++ static initialiser (which may already use those instructions), so it is plain C: its
// functions compiled for the baseline x86-64 (the file itself is compiled with the build's
// -march, whose predefined macros name what to check), no C++ library code that another object
// could have compiled with the wider instruction set. The programs carry it through
// their whole-archive link of the core (dtlab_cuda_plugin_host).
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "core/common/config.h"

namespace dtlab::core {
namespace {

#if defined(__x86_64__) && defined(__GNUC__)
#define DTLAB_BASELINE __attribute__((target("arch=x86-64")))

// Appends `text` to buf (of `size`, kept NUL-terminated).
DTLAB_BASELINE void append(char* buf, size_t size, const char* text) {
  const size_t used = strlen(buf);
  if (used + 1 >= size) return;
  strncat(buf, text, size - used - 1);
}

__attribute__((constructor(101))) DTLAB_BASELINE void requireTheBuildsCpu() {
  char missing[320] = "";
  __builtin_cpu_init();
  // Each extension the compiler was allowed to use (its predefined macro), asked of the CPU.
  // (clang 14 does not know f16c, lzcnt, movbe and vaes here: its builds skip them; GCC's, the
  // packages among them, check them.)
#define DTLAB_NEEDS(feature, name)                                 \
  if (!__builtin_cpu_supports(feature)) {                          \
    if (missing[0] != '\0') append(missing, sizeof missing, ", "); \
    append(missing, sizeof missing, name);                         \
  }
#ifdef __SSE4_2__
  DTLAB_NEEDS("sse4.2", "SSE4.2")
#endif
#ifdef __POPCNT__
  DTLAB_NEEDS("popcnt", "POPCNT")
#endif
#ifdef __AVX__
  DTLAB_NEEDS("avx", "AVX")
#endif
#ifdef __AVX2__
  DTLAB_NEEDS("avx2", "AVX2")
#endif
#ifdef __FMA__
  DTLAB_NEEDS("fma", "FMA")
#endif
#if defined(__F16C__) && !defined(__clang__)
  DTLAB_NEEDS("f16c", "F16C")
#endif
#ifdef __BMI__
  DTLAB_NEEDS("bmi", "BMI1")
#endif
#ifdef __BMI2__
  DTLAB_NEEDS("bmi2", "BMI2")
#endif
#if defined(__LZCNT__) && !defined(__clang__)
  DTLAB_NEEDS("lzcnt", "LZCNT")
#endif
#if defined(__MOVBE__) && !defined(__clang__)
  DTLAB_NEEDS("movbe", "MOVBE")
#endif
#ifdef __AVX512F__
  DTLAB_NEEDS("avx512f", "AVX-512F")
#endif
#ifdef __AVX512CD__
  DTLAB_NEEDS("avx512cd", "AVX-512CD")
#endif
#ifdef __AVX512BW__
  DTLAB_NEEDS("avx512bw", "AVX-512BW")
#endif
#ifdef __AVX512DQ__
  DTLAB_NEEDS("avx512dq", "AVX-512DQ")
#endif
#ifdef __AVX512VL__
  DTLAB_NEEDS("avx512vl", "AVX-512VL")
#endif
#ifdef __AVX512IFMA__
  DTLAB_NEEDS("avx512ifma", "AVX-512IFMA")
#endif
#ifdef __AVX512VBMI__
  DTLAB_NEEDS("avx512vbmi", "AVX-512VBMI")
#endif
#ifdef __AVX512VBMI2__
  DTLAB_NEEDS("avx512vbmi2", "AVX-512VBMI2")
#endif
#ifdef __AVX512VNNI__
  DTLAB_NEEDS("avx512vnni", "AVX-512VNNI")
#endif
#ifdef __AVX512BITALG__
  DTLAB_NEEDS("avx512bitalg", "AVX-512BITALG")
#endif
#ifdef __AVX512VPOPCNTDQ__
  DTLAB_NEEDS("avx512vpopcntdq", "AVX-512VPOPCNTDQ")
#endif
#ifdef __AVX512BF16__
  DTLAB_NEEDS("avx512bf16", "AVX-512BF16")
#endif
#ifdef __AVX512FP16__
  DTLAB_NEEDS("avx512fp16", "AVX-512FP16")
#endif
#ifdef __GFNI__
  DTLAB_NEEDS("gfni", "GFNI")
#endif
#if defined(__VAES__) && !defined(__clang__)
  DTLAB_NEEDS("vaes", "VAES")
#endif
#ifdef __VPCLMULQDQ__
  DTLAB_NEEDS("vpclmulqdq", "VPCLMULQDQ")
#endif
#undef DTLAB_NEEDS
  if (missing[0] == '\0') return;
  char message[768] = "";
  append(message, sizeof message, program_invocation_short_name);
  append(message, sizeof message, ": this build of DTLab needs a CPU with ");
  append(message, sizeof message, missing);
  append(message, sizeof message,
         ", which this one does not have (it was built with -march=" DTLAB_ARCH
         "; a build from source on this machine fits it)\n");
  const ssize_t written = write(STDERR_FILENO, message, strlen(message));
  static_cast<void>(written);
  _exit(1);
}
#endif

}  // namespace
}  // namespace dtlab::core
