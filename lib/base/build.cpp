#include "base/build.h"

#include <fstream>

namespace routelab {

const char* build_isa() {
#if defined(__AVX512F__)
  return "avx512";
#elif defined(__AVX2__)
  return "avx2";
#elif defined(__x86_64__)
  return "x86-64";
#else
  return "other";
#endif
}

std::string host_cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) break;
    const auto begin = line.find_first_not_of(" \t", colon + 1);
    if (begin == std::string::npos) break;
    return line.substr(begin);
  }
  return "unknown";
}

}  // namespace routelab
