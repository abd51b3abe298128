# What README.md and docs/results.md quote from the committed CSVs, made and
# spliced one way: sourced by recipes/85-claims.sh (which writes it into the
# docs) and by scripts/check-claims-tables.sh (which checks that the committed docs are
# what the committed CSVs give), so all read one list and splice one way.
# Sets MAIN (the default setting, the far-mass-control and Householder runs,
# the robustness and retrieval settings), ALL (MAIN and the learned-angle
# variants), ROBUST_PROBE (the probe of the robustness and retrieval runs,
# rewritten by PROBE=1) and WINDOWS (the probes' mixing windows, for the
# window check). The default setting's CSV comes first: its base
# configuration is the reference the other settings are named against.
# Needs ROUTELAB (the binary) and PY (a python3 with the plot scripts'
# modules; the quotes need the standard library alone).
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
RETRIEVAL=paper-figures/robustness-cpu/retrieval-passkey.csv
# The task suites (recipes/84-tasks.sh), judged apart from the text runs:
# their CSVs and the probes of their runs, those committed so far.
TASKS=() TASK_PROBES=()
for suite in flipflop latest-value; do
  [ -f "paper-figures/tasks-cpu/$suite.csv" ] && TASKS+=("paper-figures/tasks-cpu/$suite.csv")
  [ -f "paper-figures/tasks-cpu/$suite-probe.csv" ] && TASK_PROBES+=("paper-figures/tasks-cpu/$suite-probe.csv")
done
DOCS=(README.md docs/results.md docs/tasks.md)

# make_tables DIR [FIGURES]: every table the docs splice, as DIR/claims-NAME.md,
# and the verdicts and readings the quotes read (DIR/claims-all.csv,
# DIR/readings-all.csv). The tables the plot scripts write (retrieval, block
# shares, convergence) need matplotlib: without it, or with PLOT_TABLES=0,
# they are left out, and their blocks keep what they hold (said on stderr).
# Their figures go to FIGURES (default: DIR).
make_tables() {
  local dir=$1 figures=${2:-$1}
  "$ROUTELAB" claims "${MAIN[@]}" --windows "${WINDOWS[@]}" --summary > "$dir/claims-summary.md"
  "$ROUTELAB" claims "${ALL[@]}" --windows "${WINDOWS[@]}" --csv "$dir/claims-all.csv" \
    --readings "$dir/readings-all.csv" --markdown > "$dir/claims-all.md"
  if [ ${#TASKS[@]} -gt 0 ]; then
    local windows=()
    [ ${#TASK_PROBES[@]} -gt 0 ] && windows=(--windows "${TASK_PROBES[@]}")
    "$ROUTELAB" claims "${TASKS[@]}" "${windows[@]}" --csv "$dir/claims-tasks.csv" \
      --readings "$dir/readings-tasks.csv" --markdown > "$dir/claims-tasks.md"
  fi
  quotes tables "$dir" "$dir"
  [ "${PLOT_TABLES:-1}" = 1 ] || return 0
  if ! "$PY" -c 'import matplotlib' 2> /dev/null; then
    echo "claims-tables: $PY has no matplotlib; the retrieval, block-share and convergence tables are kept as they stand" >&2
    return 0
  fi
  # Retrieval where the training data pays for it (experiments/retrieval-cpu.toml):
  # digit accuracy and bits per key digit (chance: log2 10 = 3.32) by length.
  { "$PY" plots/passkey.py "$RETRIEVAL" --out "$figures/retrieval-passkey"
    echo
    "$PY" plots/passkey.py "$RETRIEVAL" --metric key_bits_per_byte --out "$figures/retrieval-passkey-bits"
  } > "$dir/claims-retrieval.md"
  # Random angles' score by block group against their rise (docs/results.md,
  # "Why random angles degrade little"), from the robustness probe.
  "$PY" plots/block_shares.py --angles "$ROBUST_PROBE-angles.csv" \
    --eval paper-figures/robustness-cpu/robustness.csv paper-figures/robustness-cpu/retrieval.csv \
    --out "$figures/block-shares" > "$dir/claims-shares.md"
  # Flip-flop at the training length beside PaTH's Table 1.
  if [ ${#TASKS[@]} -gt 0 ]; then
    "$PY" plots/tasks.py "${TASKS[@]}" --table "$dir/claims-flipflop.md"
  fi
  # Whether the language models had converged: every committed loss curve
  # but the tasks' (docs/tasks.md plots theirs beside the read error).
  local losses=() loss
  for loss in paper-figures/*/*-loss.csv; do
    [[ $loss == paper-figures/tasks-cpu/* ]] || losses+=("$loss")
  done
  "$PY" plots/convergence.py "${losses[@]}" --out "$figures/convergence" > "$dir/claims-convergence.md"
}

# quotes COMMAND DIR ARG...: paper-figures/quotes.py COMMAND with DIR's
# verdicts and readings (the text claims', and the task claims' where there
# are task runs).
quotes() {
  local command=$1 dir=$2; shift 2
  local claims=("$dir/claims-all.csv") tasks=()
  [ -f "$dir/claims-tasks.csv" ] && claims+=("$dir/claims-tasks.csv") tasks=(--task-readings "$dir/readings-tasks.csv")
  "$PY" paper-figures/quotes.py "$command" --claims "${claims[@]}" --readings "$dir/readings-all.csv" "${tasks[@]}" "$@"
}

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

# splice_docs DIR DOC...: each DOC rewritten in place: its tables by
# splice_tables DIR, then its quotes (`<!-- q:NAME -->`) by quotes.py from
# DIR's verdicts and readings.
splice_docs() {
  local dir=$1 doc; shift
  for doc in "$@"; do
    splice_tables "$dir" "$doc" > "$doc.tmp"
    mv "$doc.tmp" "$doc"
    quotes write "$dir" "$doc"
  done
}
