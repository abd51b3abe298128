// Is there a CUDA device to run on? Answered in every build: a CPU-only
// routelab (configured without CUDA) says so, and `--device cuda` refuses
// with one line either way. No CUDA header is needed to include this; the
// kernels' own helpers (error checks, device buffers) are in cuda/buffer.h.
#pragma once

#include <stdexcept>
#include <string>

namespace routelab::cuda {

// A `--device cuda` request that cannot be served; what() is one line.
struct DeviceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// True when routelab was built with CUDA and at least one device answers.
bool cuda_available();
// Empty when cuda_available(); otherwise why not, as one line:
//   "this routelab was built without CUDA (...)" or
//   "no CUDA device found (cudaGetDeviceCount: ...)".
std::string cuda_unavailable_reason();
// Throws DeviceError("--device cuda: " + cuda_unavailable_reason()) unless a
// device is available.
void require_cuda_device();

}  // namespace routelab::cuda
