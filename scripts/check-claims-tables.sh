#!/usr/bin/env bash
# Checks that the claims tables committed in README.md and docs/results.md
# (the `main` and `all` blocks) are what `routelab claims` gives on the
# committed CSVs, so a CSV that lands without `bash
# paper-figures/recipes/85-claims.sh` fails the suite. The tables drawn by
# Python (block shares, retrieval) are left to the recipe.
#   scripts/check-claims-tables.sh ROUTELAB [DOC...]     check (default: both docs)
#   scripts/check-claims-tables.sh --planted ROUTELAB    the check must catch a
#                                                        README with one margin changed
# Run from the repository root. Exit 0 when current, 1 when not.
set -euo pipefail
planted=0
[ "${1:-}" = --planted ] && { planted=1; shift; }
[ $# -ge 1 ] || { echo "usage: check-claims-tables.sh [--planted] ROUTELAB [DOC...]" >&2; exit 2; }
routelab=$1; shift
docs=("$@"); [ ${#docs[@]} -gt 0 ] || docs=(README.md docs/results.md)
source paper-figures/claims-tables.sh

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$routelab" claims "${MAIN[@]}" --windows "${WINDOWS[@]}" --markdown > "$tmp/claims-main.md"
"$routelab" claims "${ALL[@]}" --windows "${WINDOWS[@]}" --markdown > "$tmp/claims-all.md"

check() {  # check DOC: 0 when its claims blocks are current
  splice_tables "$tmp" "$1" > "$tmp/spliced"
  cmp -s "$1" "$tmp/spliced" && return 0
  echo "check-claims-tables: $1 holds a claims table that is not what \`routelab claims\` gives on the committed CSVs; run bash paper-figures/recipes/85-claims.sh (diff: $(diff "$1" "$tmp/spliced" | head -2 | tail -1 | cut -c1-120))" >&2
  return 1
}

if [ $planted = 1 ]; then
  # One margin of the README's table nudged by 0.001: the check must fail.
  awk '/^<!-- claims:begin main/ { inside = 1 } inside && !done && /\+[0-9]\.[0-9][0-9][0-9]/ {
         match($0, /\+[0-9]\.[0-9][0-9][0-9]/); v = substr($0, RSTART + 1, RLENGTH - 1)
         $0 = substr($0, 1, RSTART) sprintf("%.3f", v + 0.001) substr($0, RSTART + RLENGTH); done = 1 }
       { print }' README.md > "$tmp/planted.md"
  cmp -s README.md "$tmp/planted.md" && { echo "check-claims-tables: found no margin to plant an error in" >&2; exit 1; }
  if check "$tmp/planted.md" 2> /dev/null; then
    echo "check-claims-tables: a README with one margin changed passed the check" >&2; exit 1
  fi
  echo "check-claims-tables: the planted change was caught"
  exit 0
fi

status=0
for doc in "${docs[@]}"; do check "$doc" || status=1; done
[ $status = 0 ] && echo "check-claims-tables: ${docs[*]} current"
exit $status
