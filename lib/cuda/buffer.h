// What every CUDA file shares: error checks that throw one readable line, and
// a device buffer that frees itself. For code compiled with the CUDA toolkit
// (lib/cuda/*.cu, tests/test_gpu_*.cpp); the rest of routelab includes only
// cuda/device.h.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace routelab::cuda {

[[noreturn]] inline void cuda_fail(const char* what, const char* detail, const char* file, int line) {
  throw std::runtime_error(std::string("CUDA error: ") + what + ": " + detail + " (" + file + ":" +
                           std::to_string(line) + ")");
}

}  // namespace routelab::cuda

// CUDA_CHECK(cudaMemcpy(...)), CUBLAS_CHECK(cublasGemmEx(...)): throw
// std::runtime_error naming the call, the error and the place. Kernel
// launches are checked with CUDA_CHECK(cudaGetLastError()) right after.
#define ROUTELAB_CHECK_STATUS(call, success, describe)                                                \
  do {                                                                                                \
    const auto routelab_status_ = (call);                                                             \
    if (routelab_status_ != (success))                                                                \
      ::routelab::cuda::cuda_fail(#call, describe(routelab_status_), __FILE__, __LINE__);             \
  } while (0)
#define CUDA_CHECK(call) ROUTELAB_CHECK_STATUS(call, cudaSuccess, cudaGetErrorString)
#define CUBLAS_CHECK(call) ROUTELAB_CHECK_STATUS(call, CUBLAS_STATUS_SUCCESS, cublasGetStatusString)

namespace routelab::cuda {

// n elements of T in device memory, freed with the buffer. Move-only.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t n) : n_(n) {
    if (n) CUDA_CHECK(cudaMalloc(&ptr_, n * sizeof(T)));
  }
  // A device copy of host data.
  template <class Alloc>
  explicit DeviceBuffer(const std::vector<T, Alloc>& host) : DeviceBuffer(host.size()) {
    upload(host);
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);  // no throw from a destructor; a failed free leaks
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), n_(o.n_) { o.ptr_ = nullptr, o.n_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(n_, o.n_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() { return ptr_; }
  const T* data() const { return ptr_; }
  std::size_t size() const { return n_; }

  template <class Alloc>
  void upload(const std::vector<T, Alloc>& host) {
    if (host.size() != n_) throw std::invalid_argument("DeviceBuffer::upload: size mismatch");
    if (n_) CUDA_CHECK(cudaMemcpy(ptr_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> host(n_);
    if (n_) CUDA_CHECK(cudaMemcpy(host.data(), ptr_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }
  void zero() {
    if (n_) CUDA_CHECK(cudaMemset(ptr_, 0, n_ * sizeof(T)));
  }

 private:
  T* ptr_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace routelab::cuda
