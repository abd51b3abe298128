#!/usr/bin/env bash
# The task runs (issue 51, docs/tasks.md): flip-flop language modelling and
# latest-value recall for every scheme. Training takes hours on a CPU, so by
# default this re-draws from the committed paper-figures/tasks-cpu/ (skipped,
# with a note, when absent). TRAIN=1 runs the experiments first (they
# resume where they stopped); PROBE=1 probes every finished run (its mixing
# windows, for the window claim and the distance panel) and merges them into
# the committed probes (--update: the runs are not committed, so a clone
# keeps the rows of runs it has not trained); EXPORT=1 writes every finished
# run's weights as safetensors under paper-figures/tasks-cpu/models/, so the
# models can be scored again from PyTorch (docs/export.md). Then the figure
# (error against length, against distance with each run's window, and the
# learning curves). The task claims and the flip-flop table beside PaTH's
# are spliced into docs/results.md by recipes/85-claims.sh, after this one,
# from the same CSVs and probes.
set -euo pipefail

DIR=paper-figures/tasks-cpu
SUITES=(flipflop latest-value)

# train_and_export NAME TOML: TRAIN=1 runs the experiment (it resumes where it
# stopped); DONE is its finished runs; EXPORT=1 writes their weights under
# $DIR/models/NAME/.
train_and_export() {
  local name=$1 toml=$2 run model
  if [ "${TRAIN:-0}" = 1 ]; then
    "$ROUTELAB" experiment "$toml" --no-plot
  fi
  mapfile -t DONE < <("$ROUTELAB" experiment "$toml" --list | awk '/: done$/ { print $1 }')
  if [ "${EXPORT:-0}" = 1 ]; then
    mkdir -p "$DIR/models/$name"
    for run in "${DONE[@]}"; do
      model="$DIR/models/$name/$(basename "$run").safetensors"
      [ -f "$model" ] || "$ROUTELAB" export --run "$run" --out "$model"
    done
  fi
}

for suite in "${SUITES[@]}"; do
  train_and_export "$suite" "experiments/$suite-cpu.toml"
  if [ "${PROBE:-0}" = 1 ] && [ ${#DONE[@]} -gt 0 ]; then
    UPDATE=()
    [ -f "$DIR/$suite-probe.csv" ] && UPDATE=(--update)
    "$ROUTELAB" probe --run "${DONE[@]}" --lengths 1x --max-windows 1 --threads 1 \
      --csv "$DIR/$suite-probe.csv" "${UPDATE[@]}" > /dev/null
  fi
done
# Beside the suites, flip-flop under Liu et al.'s optimisation for RoPE and
# FoX (is the gap to PaTH's table the recipe?): trained and exported, neither
# probed nor drawn.
train_and_export flipflop-liu experiments/flipflop-liu.toml
if [ ! -f "$DIR/flipflop.csv" ]; then
  echo "tasks-cpu: no committed results at $DIR/flipflop.csv; skipped. TRAIN=1 PROBE=1 trains and probes them" \
    "(hours on a CPU)" >&2
  exit 0
fi
CSVS=() PROBES=()
for suite in "${SUITES[@]}"; do
  [ -f "$DIR/$suite.csv" ] && CSVS+=("$DIR/$suite.csv")
  [ -f "$DIR/$suite-probe.csv" ] && PROBES+=("$DIR/$suite-probe.csv")
done
# The windows the distance panel marks are the ones the window claim judges:
# `routelab claims` computes each run's (the lower median over its layers).
READINGS=()
if [ ${#PROBES[@]} -gt 0 ]; then
  mkdir -p "$DATA"
  "$ROUTELAB" claims "${CSVS[@]}" --windows "${PROBES[@]}" --readings "$DATA/readings-tasks.csv" > /dev/null
  READINGS=(--readings "$DATA/readings-tasks.csv")
fi
"$PY" plots/tasks.py "${CSVS[@]}" "${READINGS[@]}" --out "$OUT/tasks-cpu"
cp "$OUT/tasks-cpu.png" "$DIR/tasks.png"
