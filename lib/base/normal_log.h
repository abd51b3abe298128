// Which log Box-Muller uses in this build (lib/rng/normals_vec.cpp): the one
// part of the normals whose last bits depend on the build. Decided here, once,
// so that the normals and every sidecar (io/table.cpp) agree on it, and a CSV
// says which stream made it (docs/rng-kernels.md).
//   512  libmvec's 8-wide log (AVX-512DQ builds)
//   256  libmvec's 4-wide AVX2 log (AVX2 builds, unless
//        -DROUTELAB_AVX2_VECTOR_LOG=OFF)
//   0    glibc's scalar log
#pragma once

#if defined(__AVX512DQ__)
#define ROUTELAB_NORMAL_LOG_WIDTH 512
#define ROUTELAB_NORMAL_LOG "libmvec-avx512"
#elif defined(__AVX2__) && defined(ROUTELAB_AVX2_VECTOR_LOG)
#define ROUTELAB_NORMAL_LOG_WIDTH 256
#define ROUTELAB_NORMAL_LOG "libmvec-avx2"
#else
#define ROUTELAB_NORMAL_LOG_WIDTH 0
#define ROUTELAB_NORMAL_LOG "scalar"
#endif
