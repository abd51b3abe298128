#!/usr/bin/env bash
# Installs what is missing, then configures and builds routelab in build/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Ninja (installed by setup.sh) schedules single compiles across targets, where
# Make finishes one target before the next starts and leaves a core idle
# behind the largest unit. A build/ made earlier keeps its own generator.
generator=()
[ -f build/CMakeCache.txt ] || ! command -v ninja >/dev/null || generator=(-G Ninja)
cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
