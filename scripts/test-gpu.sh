#!/usr/bin/env bash
# The GPU check, for a machine with an NVIDIA GPU: configure with CUDA, build
# only the GPU tests, run every kernel against its CPU reference. A test that
# skips there (no device seen) counts as a failure here. Kernels are built for
# sm_90 (+ PTX); pass CUDA_ARCH=... for another GPU (e.g. CUDA_ARCH=80).
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${CUDA_ARCH:-90-real;90-virtual}
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DROUTELAB_CUDA=ON -DROUTELAB_BENCH=OFF \
  "-DCMAKE_CUDA_ARCHITECTURES=$arch" >/dev/null
cmake --build build-gpu -j"$(nproc)" --target routelab_gpu_tests
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
log=$(mktemp)
status=0
./build-gpu/routelab_gpu_tests 2>&1 | tee "$log" || status=$?
if grep -q '^\[  SKIPPED \]' "$log"; then
  echo "test-gpu: tests were skipped: no usable CUDA device" >&2
  status=1
fi
rm -f "$log"
exit "$status"
