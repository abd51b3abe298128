#!/usr/bin/env bash
# The CPU test suite under AddressSanitizer and UndefinedBehaviorSanitizer
# (the `sanitize` CMake preset: RelWithDebInfo, no CUDA, no benchmarks, no
# Python module (an instrumented extension cannot load into an uninstrumented
# interpreter; routelab.torch's tests still run from python/), in
# build-sanitize/). Any report fails the run: ASan aborts on its first error,
# UBSan does too (-fno-sanitize-recover). Leak checking is on. A clean build
# takes about 15 minutes on two cores, the suite a few more.
#   bash scripts/test-sanitize.sh            [extra ctest arguments, e.g. -R nn_]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/fetch-corpus.sh
cmake --preset sanitize >/dev/null
cmake --build build-sanitize -j"$(nproc)"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cd build-sanitize
ctest --output-on-failure -j"$(nproc)" --timeout 1800 -E "mpirun|Mpi" "$@"
# The MPI tests' processes hold Open MPI's own allocations until exit.
# They are suppressed by library (scripts/lsan-suppressions.txt), which needs
# whole stacks (slow unwinding) and plugins kept loaded so frames name them.
ASAN_OPTIONS=$ASAN_OPTIONS:fast_unwind_on_malloc=0 \
  LSAN_OPTIONS="suppressions=$(cd .. && pwd)/scripts/lsan-suppressions.txt" \
  OMPI_MCA_mca_base_component_disable_dlclose=1 \
  ctest --output-on-failure --timeout 1800 -R "mpirun|Mpi"
