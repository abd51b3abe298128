#!/usr/bin/env bash
# Figures extrapolation, far-mass-control and householder: the transformer
# experiments (Section 7, and issue 5's rotation with far-mass control and
# PaTH's Householder transport). Bits per byte
# against the evaluation length (1x..64x the training context 128) for every
# positional scheme, mean over seeds with a band, bits per byte by position
# inside the longest window, and passkey retrieval (length x depth) where the
# experiment ran it. Training takes hours on a CPU, so by default this
# re-draws from the committed results in paper-figures/<experiment>/ (skipped,
# with a note, when absent); TRAIN=1 runs `routelab experiment
# experiments/<experiment>.toml` first (resumes where it stopped; rewrites the
# committed CSVs). QUICK=1 trains the seconds-long
# experiments/extrapolation-quick.toml instead (a tiny model, 3 schemes,
# 1 seed: checks the pipeline, says nothing about the paper).
set -euo pipefail

# draw NAME CSV_STEM: the figures of one experiment's CSVs.
draw() {
  "$PY" plots/extrapolation.py "$2.csv" --positions "$2-positions.csv" --out "$OUT/$1" | tee "$DATA/$1-table.md"
  if [ -f "$2-passkey.csv" ]; then
    "$PY" plots/passkey.py "$2-passkey.csv" --out "$OUT/$1-passkey" | tee "$DATA/$1-passkey-table.md"
  fi
}

if [ "${QUICK:-0}" = 1 ]; then
  "$ROUTELAB" experiment experiments/extrapolation-quick.toml --no-plot
  SRC=runs/extrapolation-quick/extrapolation
  # The quick CSVs go with the other recipes' data.
  for f in "$SRC.csv" "$SRC-positions.csv" "$SRC.csv.json"; do
    [ -f "$f" ] && cp "$f" "$DATA/extrapolation${f#$SRC}"
  done
  draw extrapolation "$DATA/extrapolation"
  exit 0
fi

for name in extrapolation-cpu far-mass-control-cpu householder-cpu; do
  CSV=paper-figures/$name/extrapolation
  if [ "${TRAIN:-0}" = 1 ]; then
    "$ROUTELAB" experiment "experiments/$name.toml" --no-plot
  elif [ ! -f "$CSV.csv" ] || [ ! -f "$CSV-positions.csv" ]; then
    echo "$name: no committed results at $CSV.csv (and -positions.csv); skipped." \
      "TRAIN=1 trains them (hours on a CPU), QUICK=1 runs the quick version" >&2
    continue
  fi
  draw "$name" "$CSV"
done
