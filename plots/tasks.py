"""The task runs (issue 51): read error against length and against the
distance of the read's source, one line per scheme (the mean over seeds, the
seeds' spread as a band), each model's mixing window marked on the distance
panel (from `routelab claims --readings` of the same CSVs, when given), and the learning curves of
read error from the -loss.csv beside the CSV. With --table, also a markdown
table of flip-flop's error at the training length, sparse FFL(0.98) and dense
FFL(0.1) beside PaTH's Table 1 (Yang et al. 2025), for the docs' splice.
Reads task CSVs written by routelab; recomputes nothing but means over seeds."""
import argparse
import math
import os
import statistics
import sys

from common import label_variants, plt, read_checked, read_rows, save, scheme_rank

COLUMNS = ["scheme", "seed", "train_len", "task", "set", "p", "eval_len", "distance", "sequences", "reads", "errors",
           "error_rate", "ci_low", "ci_high", "read_bits"]
TEXT = ("scheme", "task", "set")

# PaTH's Table 1 (Yang et al. 2025, arXiv 2505.16381): one layer, 2 heads,
# d_model 64, trained on FFL(0.8); error in % in distribution / sparse
# FFL(0.98) / dense FFL(0.1). Their rows by routelab's scheme names where one
# corresponds (stick-breaking attention has none).
PATH_TABLE = {
    "rope": ("RoPE", 6.9, 40.3, 0.01),
    "fox": ("FoX", 8.3, 36.3, 0.0),
    "path_qk": ("PaTH", 0.0, 0.0001, 0.0),
    None: ("stick-breaking", 9.6, 38.9, 0.0),
}


def fail(message):
    print(f"tasks.py: {message}", file=sys.stderr)
    sys.exit(2)


def arguments():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="+", help="task CSVs written by routelab (eval or experiment)")
    ap.add_argument("--out", help="output path without extension (.png and .pdf are written)")
    ap.add_argument("--readings", help="the task readings of the same CSVs (routelab claims CSV... --windows PROBE... "
                    "--readings FILE): each probed run's mixing window")
    ap.add_argument("--table", help="write the flip-flop table (markdown) to this file")
    args = ap.parse_args()
    if not args.out and not args.table:
        fail("nothing to write: give --out (the figure), --table (the flip-flop table) or both")
    return args


def one_layer_unnamed(variant):
    """A variant without `layers=1`: PaTH's table and the one-layer runs keep the scheme's bare name when a
    deeper arm of the scheme sits beside them, as the loss curves name them."""
    scheme, _, swept = variant.partition(" ")
    parts = [p for p in swept.split(", ") if p and p != "layers=1"]
    return scheme + (" " + ", ".join(parts) if parts else "")


def with_depth(scheme, layers):
    """A run's variant by its depth alone: the scheme, with `layers=N` for a model deeper than one layer."""
    return scheme + (f" layers={layers}" if str(layers) != "1" else "")


def load(path):
    rows = []
    for i, row in label_variants(path, read_checked(path, COLUMNS, "task", "tasks.py", TEXT), COLUMNS):
        if row["reads"] <= 0:
            fail(f"{path} line {i}: a set with no reads")
        row["variant"] = one_layer_unnamed(row["variant"])
        row["ratio"] = row["eval_len"] / row["train_len"]
        row["path"] = path
        rows.append(row)
    return rows


def training_p(rows, variant):
    """The p a variant trained on: the one its length sets carry beyond 1x
    (further p values are asked at the training length only)."""
    ps = {r["p"] for r in rows if r["variant"] == variant and r["set"] == "length" and r["ratio"] > 1}
    return ps.pop() if len(ps) == 1 else None


def law_rows(rows):
    """The length sets at each variant's training law."""
    out = []
    for r in rows:
        if r["set"] != "length":
            continue
        if r["task"] == "flipflop" and r["p"] != training_p(rows, r["variant"]):
            continue
        out.append(r)
    return out


def by_variant(rows, x):
    """{variant: {x: [error rates over seeds]}}"""
    out = {}
    for r in rows:
        out.setdefault(r["variant"], {}).setdefault(r[x], []).append(r["error_rate"])
    return out


READINGS = ["setting", "scheme", "seed", "window"]


def setting_of(row):
    """A row's setting as `routelab claims` names it: the task, then key=value for each swept cell it has."""
    return row["task"] + "".join(f" {k}={v}" for k, v in row["swept"].items() if v != "")


def windows_of(path, rows):
    """{(task, variant, seed): window in bytes} for the distance rows' runs, read from `routelab claims
    --readings`, which computes each run's window (the lower median over its layers) for the window claim:
    the figure marks the windows the claim judged. A run with neither angles nor reflections has none."""
    if path is None:
        return None
    readings = read_checked(path, READINGS, "task readings", "tasks.py", ("setting", "scheme"))
    # The text claims' readings have these columns too; only the task readings say whether a run learned.
    with open(path) as f:
        header = f.readline().strip().split(",")
    if "learned" not in header:
        fail(f"--readings {path}: not task readings (routelab claims TASK.csv --readings FILE); "
             f"its header is {','.join(header)}")
    window = {(r["setting"], r["scheme"], int(r["seed"])): r["window"] for _, r in readings
              if not math.isnan(r["window"])}
    out = {}
    for r in rows:
        w = window.get((setting_of(r), r["scheme"], int(r["seed"]))) if r["set"] == "distance" else None
        if w is not None:
            out[(r["task"], r["variant"], int(r["seed"]))] = w
    if window and not out:
        fail(f"--readings {path}: none of its runs is a run of these CSVs' distance sets")
    return out


def style(variant):
    """One colour per scheme wherever it appears (SCHEME_ORDER), dashed for a deeper model."""
    scheme = variant.split(" ")[0]
    return dict(color=plt.cm.tab20(scheme_rank(scheme)[0] % 20), ls="--" if "layers=" in variant else "-")


def draw_lines(ax, series, windows=None, seeds_of=None, task=None):
    marks = []
    for variant in sorted(series, key=lambda v: scheme_rank(v.split(" ")[0])):
        xs = sorted(series[variant])
        means = [statistics.mean(series[variant][x]) for x in xs]
        lo = [min(series[variant][x]) for x in xs]
        hi = [max(series[variant][x]) for x in xs]
        line, = ax.plot(xs, [100 * m for m in means], marker="o", ms=3, label=variant, **style(variant))
        ax.fill_between(xs, [100 * v for v in lo], [100 * v for v in hi], color=line.get_color(), alpha=0.12)
        if windows is not None:
            ws = [windows[(task, variant, s)] for s in seeds_of.get(variant, []) if (task, variant, s) in windows]
            finite = [w for w in ws if math.isfinite(w)]
            if finite:
                marks.append((statistics.median(finite), line.get_color()))
    # Windows within the tested distances as dotted lines; those beyond (PaTH's reflections mix over millions
    # of bytes) as triangles on the right edge, so they do not stretch the axis past the data.
    if marks:
        right = max(x for v in series.values() for x in v)
        for w, color in marks:
            if w <= right:
                ax.axvline(w, color=color, ls=":", lw=1)
        for k, (w, color) in enumerate(sorted(m for m in marks if m[0] > right)):
            ax.plot([1.0], [0.97 - 0.04 * k], transform=ax.transAxes, marker=">", ms=5, color=color, clip_on=False)


def main():
    args = arguments()
    rows = [r for p in args.csv for r in load(p)]
    if args.table:
        write_table(rows, args.table)
    if not args.out:
        return
    tasks = sorted({r["task"] for r in rows})
    windows = windows_of(args.readings, rows)
    fig, axes = plt.subplots(len(tasks), 3, figsize=(18, 4.6 * len(tasks)), squeeze=False, layout="constrained")
    for row_axes, task in zip(axes, tasks):
        mine = [r for r in rows if r["task"] == task]
        T = int(mine[0]["train_len"])
        ax = row_axes[0]
        draw_lines(ax, by_variant(law_rows(mine), "ratio"))
        ax.set_xscale("log", base=2)
        ax.set_xlabel("evaluation length / training length")
        ax.set_ylabel("read error (%)")
        ax.set_title(f"{task}: error against length (T = {T})")
        ax = row_axes[1]
        dist = [r for r in mine if r["set"] == "distance"]
        seeds_of = {}
        for r in dist:
            seeds_of.setdefault(r["variant"], set()).add(int(r["seed"]))
        if dist:
            draw_lines(ax, by_variant(dist, "distance"), windows, seeds_of, task)
            ax.axvline(T, color="black", lw=0.8)
            ax.set_xscale("log", base=2)
        ax.set_xlabel("distance of the read's source (bytes); dotted: mixing window\n"
                      "(triangle: beyond the longest distance), black: T")
        ax.set_ylabel("read error (%)")
        ax.set_title(f"{task}: error against distance")
        ax = row_axes[2]
        # Each task's curves from the loss CSVs beside its own CSVs only.
        curves = []
        for p in args.csv:
            loss = p[:-4] + "-loss.csv" if p.endswith(".csv") else p + "-loss.csv"
            if os.path.isfile(loss) and any(r["task"] == task for r in rows if r["path"] == p):
                curves += [r for r in read_rows(loss) if "read_error" in r]
        series = {}
        for r in curves:
            key = with_depth(r["scheme"], r.get("layers", "1"))
            series.setdefault(key, {}).setdefault(int(r["step"]), []).append(float(r["read_error"]))
        if series:
            draw_lines(ax, series)
        ax.set_xlabel("training step")
        ax.set_ylabel("read error of the batch before its update (%)")
        ax.set_title(f"{task}: learning curves")
    for row_axes in axes:
        # Beside the row, not over its lines: a suite holds two dozen variants.
        row_axes[2].legend(fontsize=7, ncol=2, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    save(fig, args.out)


def percent(e):
    """One decimal, or two significant digits below 1% (the dense set's errors are that small)."""
    return f"{e:.1f}" if e >= 1 or e == 0 else f"{e:.2g}"


def write_table(rows, path):
    """Flip-flop at the training length: in distribution, sparse, dense, mean
    (min-max) over seeds, beside PaTH's Table 1."""
    ff = [r for r in rows if r["task"] == "flipflop" and r["set"] == "length" and r["ratio"] == 1]
    cells = {}
    for r in ff:
        cells.setdefault(r["variant"], {}).setdefault(r["p"], []).append(r)
    lines = ["| scheme | seeds | FFL(0.8) | sparse FFL(0.98) | dense FFL(0.1) | reads per seed | PaTH's Table 1 |",
             "|---|---|---|---|---|---|---|"]

    def cell(rs):
        if not rs:
            return "-"
        e = [100 * r["error_rate"] for r in rs]
        return percent(statistics.mean(e)) + (f" ({percent(min(e))}-{percent(max(e))})" if len(e) > 1 else "")
    for variant in sorted(cells, key=lambda v: scheme_rank(v.split(" ")[0])):
        by_p = cells[variant]
        seeds = len({r["seed"] for rs in by_p.values() for r in rs})
        reads = "/".join(str(int(min(r["reads"] for r in by_p.get(p, [])))) if by_p.get(p) else "-"
                         for p in (0.8, 0.98, 0.1))
        theirs = PATH_TABLE.get(variant)
        ref = f"{theirs[0]}: {theirs[1]} / {theirs[2]} / {theirs[3]}" if theirs else ""
        lines.append(f"| {variant} | {seeds} | {cell(by_p.get(0.8, []))} | {cell(by_p.get(0.98, []))} | "
                     f"{cell(by_p.get(0.1, []))} | {reads} | {ref} |")
    name, a, b, c = PATH_TABLE[None]
    lines.append(f"| (no counterpart) | | | | | | {name}: {a} / {b} / {c} |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
