#!/usr/bin/env bash
# The claims table (issue 35): `routelab claims` judges the paper's
# experimental claims from the committed experiment CSVs, setting by setting.
# Its markdown replaces what stands between `<!-- claims:begin NAME -->` and
# `<!-- claims:end -->` in README.md and docs/results.md, so a changed CSV
# changes the tables: NAME main reads the default setting and the settings of
# robustness-cpu; NAME all adds the learned-angle variants of
# learned-angles-cpu. The figure: each claim's margin per setting and seed
# (plots/claims.py). Seconds.
# The default setting's CSV comes first: its base configuration is the
# reference the other settings are named against.
set -euo pipefail

MAIN=(paper-figures/extrapolation-cpu/extrapolation.csv
      paper-figures/far-mass-control-cpu/extrapolation.csv
      paper-figures/householder-cpu/extrapolation.csv)
for extra in paper-figures/robustness-cpu/robustness.csv paper-figures/robustness-cpu/retrieval.csv; do
  [ -f "$extra" ] && MAIN+=("$extra")
done
ALL=("${MAIN[@]}" paper-figures/learned-angles-cpu/learned-angles.csv)
"$ROUTELAB" claims "${MAIN[@]}" --csv "$DATA/claims.csv" | tee "$DATA/claims-table.txt"
"$ROUTELAB" claims "${MAIN[@]}" --markdown > "$DATA/claims-main.md"
"$ROUTELAB" claims "${ALL[@]}" --csv "$DATA/claims-all.csv" --markdown > "$DATA/claims-all.md"
"$PY" plots/claims.py "$DATA/claims.csv" --out "$OUT/claims"

# Splice each table between its markers; a file without them is left alone.
for doc in README.md docs/results.md; do
  grep -q '^<!-- claims:begin' "$doc" || continue
  awk -v dir="$DATA" '
    /^<!-- claims:begin / { print; table = dir "/claims-" $3 ".md"
                            while ((getline line < table) > 0) print line; close(table); skip = 1; next }
    /^<!-- claims:end/    { skip = 0 }
    !skip' "$doc" > "$doc.tmp"
  mv "$doc.tmp" "$doc"
done
