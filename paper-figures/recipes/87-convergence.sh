#!/usr/bin/env bash
# Figure convergence (issue 35): whether the trained models had converged.
# Every `routelab experiment` writes FILE-loss.csv beside FILE.csv (each
# run's training loss in blocks of 100 steps); plots/convergence.py draws
# every committed one, a panel per experiment and setting, and writes the
# table of each run group's last-block loss and its fall over the last
# third of training, spliced into docs/results.md between
# `<!-- claims:begin convergence -->` and its end marker. Seconds.
set -euo pipefail

# splice_docs, shared with the claims recipe.
source paper-figures/claims-tables.sh

LOSSES=(paper-figures/*/*-loss.csv)
if [ ! -f "${LOSSES[0]}" ]; then
  echo "convergence: no committed loss CSVs (paper-figures/*/*-loss.csv); skipped" >&2
  exit 0
fi
TABLES=$(mktemp -d)
trap 'rm -rf "$TABLES"' EXIT
"$PY" plots/convergence.py "${LOSSES[@]}" --out "$OUT/convergence" | tee "$DATA/convergence-table.md" \
  > "$TABLES/claims-convergence.md"
# docs/results.md shows the committed copy, so it moves with the table.
cp "$OUT/convergence.png" paper-figures/robustness-cpu/convergence.png
splice_docs "$TABLES" docs/results.md
