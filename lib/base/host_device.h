// ROUTELAB_HOST_DEVICE marks a function that nvcc compiles for the host and
// the device alike (lib/cuda/*.cu), and a plain C++ compiler for the host:
// one source for the CPU code and the GPU kernels that must agree with it.
// In base/, below every concern: rng/, nn/, attention/ and cuda/ use it.
#pragma once

#ifdef __CUDACC__
#define ROUTELAB_HOST_DEVICE __host__ __device__
#else
#define ROUTELAB_HOST_DEVICE
#endif

// Before a host-device template that calls a policy's host-only or
// device-only members: nvcc checks the call only where it is instantiated.
#ifdef __CUDACC__
#define ROUTELAB_EXEC_CHECK_DISABLE _Pragma("nv_exec_check_disable")
#else
#define ROUTELAB_EXEC_CHECK_DISABLE
#endif

// A large host-device function that a kernel calls from one branch of many:
// kept out of line on the device so it neither swells every kernel that
// dispatches to it nor raises their register count (the CPU compiler, and
// nvcc's host pass, decide for themselves).
#ifdef __CUDA_ARCH__
#define ROUTELAB_OUT_OF_LINE __noinline__
#else
#define ROUTELAB_OUT_OF_LINE
#endif
