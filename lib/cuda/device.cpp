// Device discovery. Compiled into routelab_core in every build (it is plain
// C++ against the CUDA runtime API), so the refusal text lives in one place.
#include "cuda/device.h"

#ifdef ROUTELAB_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace routelab::cuda {

std::string cuda_unavailable_reason() {
#ifdef ROUTELAB_WITH_CUDA
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later calls see a clean state
    return std::string("no CUDA device found (cudaGetDeviceCount: ") + cudaGetErrorString(err) + ")";
  }
  if (count == 0) return "no CUDA device found (cudaGetDeviceCount: 0 devices)";
  return "";
#else
  return "this routelab was built without CUDA (configure with -DROUTELAB_CUDA=ON and the CUDA toolkit)";
#endif
}

bool cuda_available() { return cuda_unavailable_reason().empty(); }

void require_cuda_device() {
  const std::string why = cuda_unavailable_reason();
  if (!why.empty()) throw DeviceError("--device cuda: " + why);
}

}  // namespace routelab::cuda
