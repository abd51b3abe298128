#!/usr/bin/env bash
# The main job: set up, build, and run every catalogued check at default sizes
# (pass --quick for the one-minute version).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
./build/routelab verify "$@"
