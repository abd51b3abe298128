#!/usr/bin/env bash
# Figure learned-angles-cpu (issue 14): learned accumulated angles by their
# start (N(0, sigma^2) at sigma 0.03 .. 3, the old U(-f_b, f_b), one table for
# all layers, increments projected from the hidden state, a longer training
# length), the rise of bits per byte to 16x and 64x against the mixing window
# the probe reads off each trained model, and the dependence of the block
# phases that Theorem 2 assumes away. Training takes hours on a CPU and the
# probe needs the trained runs, so by default this re-draws from the committed
# paper-figures/learned-angles-cpu/ (skipped, with a note, when absent);
# TRAIN=1 runs `routelab experiment experiments/learned-angles-cpu.toml`
# first, PROBE=1 probes every finished run the experiment lists and merges
# them into the committed probe (probe --update: the runs are not committed,
# so the rows of runs a clone has not trained are kept).
set -euo pipefail

DIR=paper-figures/learned-angles-cpu
CSV=$DIR/learned-angles
if [ "${TRAIN:-0}" = 1 ]; then
  "$ROUTELAB" experiment experiments/learned-angles-cpu.toml --no-plot
fi
if [ "${PROBE:-0}" = 1 ]; then
  mapfile -t RUNS < <("$ROUTELAB" experiment experiments/learned-angles-cpu.toml --list | awk '/: done$/ { print $1 }')
  UPDATE=()
  [ -f "$DIR/probe.csv" ] && UPDATE=(--update)
  [ ${#RUNS[@]} -gt 0 ] && "$ROUTELAB" probe --run "${RUNS[@]}" --lengths 1x,16x --window 32 --max-windows 2 \
    --csv "$DIR/probe.csv" "${UPDATE[@]}" > /dev/null
fi
if [ ! -f "$CSV.csv" ] || [ ! -f "$DIR/probe-angles.csv" ]; then
  echo "learned-angles-cpu: no committed results at $CSV.csv (and $DIR/probe-angles.csv); skipped." \
    "TRAIN=1 PROBE=1 trains and probes them (hours on a CPU)" >&2
  exit 0
fi
"$PY" plots/learned_angles.py "$CSV.csv" --angles "$DIR/probe-angles.csv" --phases "$DIR/probe-phases.csv" \
  --out "$OUT/learned-angles-cpu" | tee "$DATA/learned-angles-cpu-table.md"
"$PY" plots/extrapolation.py "$CSV.csv" --positions "$CSV-positions.csv" --out "$OUT/learned-angles-cpu-lengths" \
  > "$DATA/learned-angles-cpu-lengths-table.md"
if [ -f "$CSV-passkey.csv" ]; then
  "$PY" plots/passkey.py "$CSV-passkey.csv" --out "$OUT/learned-angles-cpu-passkey" \
    > "$DATA/learned-angles-cpu-passkey-table.md"
fi
