#!/usr/bin/env bash
# The main job: set up, build, run every check at default sizes
# (pass --quick for the one-minute version), then rebuild every figure into
# paper-figures/out/ (about 7 minutes on two cores; QUICK=1 in the
# environment for small sizes). Exits non-zero if any check fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
status=0
./build/routelab verify "$@" || status=$?
bash paper-figures/build.sh
exit $status
