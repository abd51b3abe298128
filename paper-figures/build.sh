#!/usr/bin/env bash
# Rebuilds every figure: runs each recipe in paper-figures/recipes/ in name
# order. A recipe runs one simulation (sizes from $QUICK) into $DATA and one
# plot script into $OUT.
#   paper-figures/build.sh            full sizes
#   QUICK=1 paper-figures/build.sh    small sizes, about a minute
set -euo pipefail
cd "$(dirname "$0")/.."
export ROUTELAB=${ROUTELAB:-$PWD/build/routelab}
export PY=${PY:-/usr/bin/python3}
export OUT=${OUT:-$PWD/paper-figures/out}
export DATA=${DATA:-$OUT/data}
export QUICK=${QUICK:-0}
[ -x "$ROUTELAB" ] || { echo "paper-figures: $ROUTELAB not built; run scripts/build.sh" >&2; exit 2; }
mkdir -p "$OUT" "$DATA"
start=$(date +%s)
for recipe in paper-figures/recipes/*.sh; do
  t0=$(date +%s)
  bash "$recipe"
  echo "paper-figures: $(basename "$recipe" .sh) done in $(( $(date +%s) - t0 )) s" >&2
done
echo "paper-figures: all figures in $OUT, $(( $(date +%s) - start )) s" >&2
