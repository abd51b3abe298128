// What a result's last bits depend on besides its seed: the vector extension
// the build was compiled for (FMA contraction and the vector kernels follow
// it) and the CPU it ran on. Every sidecar records both (io/table.cpp) beside
// normal_log_path(), so a CSV says where it was made; within one build the
// bytes are the same at any thread count, across builds they may differ in
// the last bits (docs/rng-kernels.md).
#pragma once

#include <string>

namespace routelab {

// The widest vector extension the library was compiled for (-march or -m
// flags): "avx512", "avx2", "x86-64" or "other".
const char* build_isa();

// This machine's CPU as /proc/cpuinfo names it ("model name"), or "unknown".
std::string host_cpu_name();

}  // namespace routelab
