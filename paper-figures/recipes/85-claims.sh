#!/usr/bin/env bash
# The claims table (issue 35): `routelab claims` judges the paper's
# experimental claims from the committed experiment CSVs, setting by setting.
# Its markdown replaces what stands between `<!-- claims:begin NAME -->` and
# `<!-- claims:end -->` in README.md and docs/results.md, so a changed CSV
# changes the tables: NAME main reads the default setting and the settings of
# robustness-cpu; NAME all adds the learned-angle variants of
# learned-angles-cpu. The figure: each claim's margin per setting and seed
# (plots/claims.py). The window check (window_beyond_t_degrades) reads the
# committed probes' windows (below). Seconds. The test suite checks that the
# committed tables are what this writes (scripts/check-claims-tables.sh).
set -euo pipefail

# MAIN, ALL, ROBUST_PROBE, WINDOWS and splice_docs, shared with the check
# that the committed tables are current (scripts/check-claims-tables.sh).
source paper-figures/claims-tables.sh

# The window check reads the probes' mixing windows. PROBE=1 probes the
# finished runs of robustness-cpu and retrieval-cpu first (their angles
# side and 1x only: about ten seconds a run) and merges them into the
# committed probe (--update): the runs themselves are not committed, so a
# clone that trains new runs keeps every other run's rows.
if [ "${PROBE:-0}" = 1 ]; then
  mapfile -t DONE < <(for toml in experiments/robustness-cpu.toml experiments/retrieval-cpu.toml; do
    "$ROUTELAB" experiment "$toml" --list; done | awk '/: done$/ { print $1 }')
  UPDATE=()
  [ -f "$ROBUST_PROBE.csv" ] && UPDATE=(--update)
  [ ${#DONE[@]} -gt 0 ] && "$ROUTELAB" probe --run "${DONE[@]}" --lengths 1x --max-windows 1 --threads 1 \
    --csv "$ROBUST_PROBE.csv" "${UPDATE[@]}" > /dev/null
fi
"$ROUTELAB" claims "${MAIN[@]}" --windows "${WINDOWS[@]}" --csv "$DATA/claims.csv" | tee "$DATA/claims-table.txt"
"$ROUTELAB" claims "${MAIN[@]}" --windows "${WINDOWS[@]}" --markdown > "$DATA/claims-main.md"
"$ROUTELAB" claims "${ALL[@]}" --windows "${WINDOWS[@]}" --csv "$DATA/claims-all.csv" --markdown > "$DATA/claims-all.md"
"$PY" plots/claims.py "$DATA/claims.csv" --out "$OUT/claims"
# docs/results.md shows the committed copy, so it moves with the tables.
cp "$OUT/claims.png" paper-figures/robustness-cpu/claims.png

# Random angles' score by block group against their rise (docs/results.md,
# "Why random angles degrade little"), from the same probe.
if [ -f "$ROBUST_PROBE-angles.csv" ]; then
  "$PY" plots/block_shares.py --angles "$ROBUST_PROBE-angles.csv" \
    --eval paper-figures/robustness-cpu/robustness.csv paper-figures/robustness-cpu/retrieval.csv \
    --out "$OUT/block-shares" > "$DATA/claims-shares.md"
  cp "$OUT/block-shares.png" paper-figures/robustness-cpu/block-shares.png
fi

# Retrieval where the training data pays for it (experiments/retrieval-cpu.toml):
# digit accuracy and bits per key digit (chance: log2 10 = 3.32) by length,
# spliced between `<!-- claims:begin retrieval -->` and its end marker.
RETRIEVAL=paper-figures/robustness-cpu/retrieval-passkey.csv
if [ -f "$RETRIEVAL" ]; then
  { "$PY" plots/passkey.py "$RETRIEVAL" --out "$OUT/retrieval-passkey"
    echo
    "$PY" plots/passkey.py "$RETRIEVAL" --metric key_bits_per_byte --out "$OUT/retrieval-passkey-bits"
  } > "$DATA/claims-retrieval.md"
fi

# Splice each table between its markers; a file without them is left alone.
splice_docs "$DATA" README.md docs/results.md
