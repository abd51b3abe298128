#!/usr/bin/env bash
# Figure extrapolation: the transformer experiment (Section 7). Bits per byte
# against the evaluation length (1x..64x the training context 128) for every
# positional scheme, mean over seeds with a band, and bits per byte by position
# inside the longest window. Training all schemes and seeds takes hours on a
# CPU, so by default this re-draws from the committed results in
# paper-figures/extrapolation-cpu/ (skipped, with a note, when they are absent);
# TRAIN=1 runs `routelab experiment experiments/extrapolation-cpu.toml` first
# (resumes where it stopped; it rewrites the committed CSVs). QUICK=1 trains
# the seconds-long experiments/extrapolation-quick.toml instead (a tiny model,
# 3 schemes, 1 seed: checks the pipeline, says nothing about the paper).
set -euo pipefail
if [ "${QUICK:-0}" = 1 ]; then
  "$ROUTELAB" experiment experiments/extrapolation-quick.toml --no-plot
  SRC=runs/extrapolation-quick/extrapolation
  # The quick CSVs go with the other recipes' data.
  cp "$SRC.csv" "$DATA/extrapolation.csv"
  cp "$SRC-positions.csv" "$DATA/extrapolation-positions.csv"
  [ -f "$SRC.csv.json" ] && cp "$SRC.csv.json" "$DATA/extrapolation.csv.json"
  CSV=$DATA/extrapolation
else
  CSV=paper-figures/extrapolation-cpu/extrapolation
  if [ "${TRAIN:-0}" = 1 ]; then
    "$ROUTELAB" experiment experiments/extrapolation-cpu.toml --no-plot
  elif [ ! -f "$CSV.csv" ] || [ ! -f "$CSV-positions.csv" ]; then
    echo "extrapolation: no committed results at $CSV.csv (and -positions.csv); skipped." \
      "TRAIN=1 trains them (hours on a CPU), QUICK=1 runs the quick version" >&2
    exit 0
  fi
fi
"$PY" plots/extrapolation.py "$CSV.csv" --positions "$CSV-positions.csv" --out "$OUT/extrapolation" \
  | tee "$DATA/extrapolation-table.md"
