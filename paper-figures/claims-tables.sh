# The claims tables' inputs and their splice, sourced by recipes/85-claims.sh
# (which writes the tables into README.md and docs/results.md), by
# recipes/87-convergence.sh (its table into docs/results.md) and by
# scripts/check-claims-tables.sh (which checks that the committed tables are
# what the committed CSVs give), so all read one list and splice one way.
# Sets MAIN (the default setting, the
# far-mass-control and Householder runs, the robustness and retrieval
# settings), ALL (MAIN and the learned-angle variants), ROBUST_PROBE (the
# probe of the robustness and retrieval runs, rewritten by PROBE=1) and
# WINDOWS (the probes' mixing windows, for the window check). The default
# setting's CSV comes first: its base configuration is the reference the
# other settings are named against.
MAIN=(paper-figures/extrapolation-cpu/extrapolation.csv
      paper-figures/far-mass-control-cpu/extrapolation.csv
      paper-figures/householder-cpu/extrapolation.csv
      paper-figures/robustness-cpu/robustness.csv
      paper-figures/robustness-cpu/retrieval.csv)
ALL=("${MAIN[@]}" paper-figures/learned-angles-cpu/learned-angles.csv)
ROBUST_PROBE=paper-figures/robustness-cpu/probe
WINDOWS=(paper-figures/probe-cpu/probe.csv paper-figures/learned-angles-cpu/probe.csv
         paper-figures/householder-cpu/probe-s1.csv paper-figures/householder-cpu/probe-s23.csv
         "$ROBUST_PROBE.csv")

# splice_tables DIR DOC: DOC with the table DIR/claims-NAME.md put between
# each `<!-- claims:begin NAME -->` and the next `<!-- claims:end -->`, on
# stdout. A block whose table is not in DIR is kept as it stands.
splice_tables() {
  awk -v dir="$1" '
    /^<!-- claims:begin / { print; table = dir "/claims-" $3 ".md"
                            if ((getline line < table) > 0) {
                              print line; while ((getline line < table) > 0) print line
                              close(table); skip = 1 }
                            next }
    /^<!-- claims:end/    { skip = 0 }
    !skip' "$2"
}

# splice_docs DIR DOC...: each DOC rewritten in place by splice_tables DIR;
# a DOC without a `<!-- claims:begin` marker is left alone.
splice_docs() {
  local dir=$1 doc; shift
  for doc in "$@"; do
    grep -q '^<!-- claims:begin' "$doc" || continue
    splice_tables "$dir" "$doc" > "$doc.tmp"
    mv "$doc.tmp" "$doc"
  done
}
