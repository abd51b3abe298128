#!/usr/bin/env bash
# Figure probe-cpu: inside the seed-1 models of the extrapolation experiments
# (issue 5, the probe). Attention far mass (weight on keys more than W = 32
# bytes back) against the evaluation length per scheme and layer, with
# Proposition 3's lower bound from each row's logit range; the tables (far
# mass by length; each layer's decorrelation distance from its step angles'
# gaps) to stdout and $DATA/probe-cpu-table.md. Probing needs the trained
# runs (runs/extrapolation-cpu/*-s1, hours to train), so by default this
# re-draws from the committed paper-figures/probe-cpu/probe.csv and
# probe-angles.csv (skipped, with a note, when absent); PROBE=1 probes the
# runs first (about 15 min on one thread; rewrites the committed CSVs).
set -euo pipefail

CSV=paper-figures/probe-cpu/probe
SCHEMES="nope rope rope_qkv random_qk random_qkv learned_qk learned_qkv alibi learned_qkv_alibi random_qkv_alibi
learned_qkv_forget"
if [ "${PROBE:-0}" = 1 ]; then
  RUNS=""
  for s in $SCHEMES; do RUNS="$RUNS runs/extrapolation-cpu/$s-s1"; done
  # shellcheck disable=SC2086
  "$ROUTELAB" probe --run $RUNS --lengths 1x,2x,4x,8x,16x,32x,64x --window 32 --max-windows 2 --threads 1 \
    --csv "$CSV.csv" > /dev/null
elif [ ! -f "$CSV.csv" ] || [ ! -f "$CSV-angles.csv" ]; then
  echo "probe-cpu: no committed results at $CSV.csv (and -angles.csv); skipped. PROBE=1 probes the trained" \
    "runs in runs/extrapolation-cpu/ (train them with TRAIN=1 recipes/70-extrapolation.sh)" >&2
  exit 0
fi
"$PY" plots/probe.py "$CSV.csv" --angles "$CSV-angles.csv" --out "$OUT/probe-cpu" | tee "$DATA/probe-cpu-table.md"
# PaTH's Householder transport (issue 5): its own CSV, since its run lives in
# runs/householder-cpu/ (experiments/householder-cpu.toml).
HH=paper-figures/probe-cpu/probe-householder
if [ "${PROBE:-0}" = 1 ] && [ -f runs/householder-cpu/householder_qkv-s1/checkpoint.bin ]; then
  "$ROUTELAB" probe --run runs/householder-cpu/householder_qkv-s1 --lengths 1x,2x,4x,8x,16x,32x,64x --window 32 \
    --max-windows 2 --threads 1 --csv "$HH.csv" > /dev/null
fi
if [ -f "$HH.csv" ]; then
  "$PY" plots/probe.py "$HH.csv" --out "$OUT/probe-householder-cpu" | tee "$DATA/probe-householder-cpu-table.md"
fi
