#!/usr/bin/env bash
# The claims and every number the docs take from the committed CSVs (issues
# 35 and 54). `routelab claims` judges the paper's experimental claims from
# the committed experiment CSVs, setting by setting: its summary goes
# between `<!-- claims:begin summary -->` and `<!-- claims:end -->` in
# README.md, its full table (`all`: the default setting, the robustness and
# retrieval settings, the learned-angle variants) in docs/results.md.
# paper-figures/quotes.py writes the other tables (bits per byte by setting,
# the probes) and every number quoted in the prose (`<!-- q:NAME -->`); the
# plot scripts the retrieval, block-share and convergence tables. The
# figures: each claim's margin per setting and seed (plots/claims.py), the
# block shares and the training loss curves, copied beside the CSVs that
# docs/results.md shows them from. Seconds. The test suite checks that the
# committed docs are what this writes (scripts/check-claims-tables.sh).
set -euo pipefail

# MAIN, ALL, ROBUST_PROBE, WINDOWS, DOCS, make_tables and splice_docs, shared
# with the check that the committed docs are current.
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
make_tables "$DATA" "$OUT"
"$ROUTELAB" claims "${MAIN[@]}" --windows "${WINDOWS[@]}" --csv "$DATA/claims.csv" | tee "$DATA/claims-table.txt"
"$PY" plots/claims.py "$DATA/claims.csv" --out "$OUT/claims"
# docs/results.md shows the committed copies, so they move with the tables.
for figure in claims block-shares convergence; do
  [ -f "$OUT/$figure.png" ] && cp "$OUT/$figure.png" "paper-figures/robustness-cpu/$figure.png"
done
splice_docs "$DATA" "${DOCS[@]}"
