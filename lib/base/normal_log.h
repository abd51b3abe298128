// Which log Box-Muller uses in this build (lib/rng/normals_vec.cpp): the one
// part of the normals whose last bits depend on the build.
//   "libmvec-avx512"  libmvec's 8-wide log (AVX-512DQ builds)
//   "libmvec-avx2"    libmvec's 4-wide AVX2 log (AVX2 builds, unless
//                     -DROUTELAB_AVX2_VECTOR_LOG=OFF)
//   "scalar"          glibc's scalar log
// normals_vec.cpp decides it, the one file the build gives
// ROUTELAB_AVX2_VECTOR_LOG; everything else, every sidecar (io/table.cpp)
// included, asks this function, so a CSV says which stream made it
// (docs/rng-kernels.md). Here in base/ so that io/ may ask.
#pragma once

namespace routelab {

const char* normal_log_path();

}  // namespace routelab
