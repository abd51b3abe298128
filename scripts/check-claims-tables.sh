#!/usr/bin/env bash
# Checks that every number README.md and docs/results.md take from the
# committed CSVs is what those CSVs give: each generated table (between
# `<!-- claims:begin NAME -->` and `<!-- claims:end -->`: `routelab claims`,
# paper-figures/quotes.py and the plot scripts) and each quote in the prose
# (between `<!-- q:NAME -->` and `<!-- /q -->`), and that no number that
# looks like data stands in the prose unquoted. So a CSV that lands without
# `bash paper-figures/recipes/85-claims.sh`, or a number typed by hand,
# fails the suite, as does a README.md of 250 lines or more. The plot
# scripts' tables need matplotlib; without it they are not checked (said on
# stderr).
#   scripts/check-claims-tables.sh ROUTELAB [DOC...]     check (default: both docs)
#   scripts/check-claims-tables.sh --planted ROUTELAB    the check must catch a README
#                                                        with one table margin changed,
#                                                        and one with one quote changed
# Run from the repository root. Exit 0 when current, 1 when not.
set -euo pipefail
planted=0
[ "${1:-}" = --planted ] && { planted=1; shift; }
[ $# -ge 1 ] || { echo "usage: check-claims-tables.sh [--planted] ROUTELAB [DOC...]" >&2; exit 2; }
ROUTELAB=$1; shift
PY=${PY:-/usr/bin/python3}
[ -x "$PY" ] || PY=python3
source paper-figures/claims-tables.sh
docs=("$@"); [ ${#docs[@]} -gt 0 ] || docs=("${DOCS[@]}")

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# The planted errors need no plot: their tables are kept as they stand.
[ $planted = 1 ] && PLOT_TABLES=0
make_tables "$tmp"

check() {  # check DOC: 0 when its tables and quotes are current and no number is unquoted
  local status=0
  splice_tables "$tmp" "$1" > "$tmp/spliced"
  if ! cmp -s "$1" "$tmp/spliced"; then
    echo "check-claims-tables: $1 holds a generated table that is not what the committed CSVs give; run bash paper-figures/recipes/85-claims.sh (diff: $(diff "$1" "$tmp/spliced" | head -2 | tail -1 | cut -c1-120))" >&2
    status=1
  fi
  quotes check "$tmp" "$1" || status=1
  return $status
}

if [ $planted = 1 ]; then
  # One margin of the README's summary table nudged by 0.001, and the first
  # quote of docs/results.md changed: the check must fail on each.
  awk '/^<!-- claims:begin summary/ { inside = 1 } inside && !done && /[+][0-9]\.[0-9][0-9][0-9]/ {
         match($0, /[+][0-9]\.[0-9][0-9][0-9]/); v = substr($0, RSTART + 1, RLENGTH - 1)
         $0 = substr($0, 1, RSTART) sprintf("%.3f", v + 0.001) substr($0, RSTART + RLENGTH); done = 1 }
       { print }' README.md > "$tmp/planted-table.md"
  cmp -s README.md "$tmp/planted-table.md" && { echo "check-claims-tables: found no margin to plant an error in" >&2; exit 1; }
  "$PY" paper-figures/quotes.py plant docs/results.md > "$tmp/planted-quote.md"
  for planted_doc in planted-table planted-quote; do
    if check "$tmp/$planted_doc.md" 2> /dev/null; then
      echo "check-claims-tables: $planted_doc.md passed the check" >&2; exit 1
    fi
  done
  echo "check-claims-tables: both planted changes were caught"
  exit 0
fi

status=0
for doc in "${docs[@]}"; do check "$doc" || status=1; done
# README.md is the front page (issue 54): the claims, the verdicts and the
# figure on about a screen; detail belongs in docs/.
readme_lines=$(wc -l < README.md)
if [ "$readme_lines" -ge 250 ]; then
  echo "check-claims-tables: README.md has $readme_lines lines; the front page stays under 250: move detail to docs/" >&2
  status=1
fi
[ $status = 0 ] && echo "check-claims-tables: ${docs[*]} current"
exit $status
