// Prints the three Eigen settings that fix how Eigen objects are laid out and
// allocated, as Eigen derives them under the flags routelab_core is compiled
// with (cmake/install.cmake pins them in the installed target).
#include <Eigen/Core>

#include <cstdio>

int main() {
  std::printf("EIGEN_MAX_ALIGN_BYTES=%d;EIGEN_MAX_STATIC_ALIGN_BYTES=%d;EIGEN_MALLOC_ALREADY_ALIGNED=%d",
              EIGEN_MAX_ALIGN_BYTES, EIGEN_MAX_STATIC_ALIGN_BYTES, EIGEN_MALLOC_ALREADY_ALIGNED);
}
