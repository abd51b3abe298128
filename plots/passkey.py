"""Passkey retrieval of the transformer experiment: one heat map per positional
scheme, evaluation window length (multiples of the training length) across,
depth of the key in the context down, each cell the mean over seeds of one
metric (digit accuracy by default), its value printed in the cell, one colour
scale for all panels. Reads passkey CSVs (one or more, concatenated); averages
over seeds, recomputes nothing else. Prints a scheme x length table of the
means over depths to stdout."""
import argparse
import math
import sys

import numpy as np

from common import label_variants, plt, read_checked, save, scheme_rank

COLUMNS = ["scheme", "seed", "train_len", "eval_len", "depth", "trials", "accuracy", "digit_accuracy",
           "key_bits_per_byte"]
KEY = ("variant", "seed", "train_len", "eval_len", "depth")

CHANCE_BITS = math.log2(10)  # -log2(1/10): a uniform guess over ten digits

# metric -> (what a cell is, colour map, higher is better)
METRICS = {
    "accuracy": ("passkey accuracy (all digits right, teacher forced)", "viridis", True),
    "digit_accuracy": ("digit accuracy (fraction of key digits right, teacher forced)", "viridis", True),
    "key_bits_per_byte": ("bits per key digit (mean $-\\log_2 p$, lower is better)", "viridis_r", False),
}
PER_ROW = 4


def fail(message):
    print(f"passkey.py: {message}", file=sys.stderr)
    sys.exit(2)


def arguments():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="+", help="passkey CSV(s) written by routelab; rows are concatenated")
    ap.add_argument("--out", required=True, help="output path without extension (.png and .pdf are written)")
    ap.add_argument("--metric", choices=list(METRICS), default="digit_accuracy",
                    help="what each cell shows (default: digit_accuracy)")
    return ap.parse_args()


def load(path):
    """Rows of one passkey CSV, numbers parsed; one line and exit 2 otherwise."""
    out = []
    for i, row in label_variants(path, read_checked(path, COLUMNS, "passkey", "passkey.py"), COLUMNS):
        if not row["scheme"]:
            fail(f"{path} line {i}: an empty scheme")
        for c in ("train_len", "eval_len", "depth"):
            if not math.isfinite(row[c]):
                fail(f"{path} line {i}: {c} is empty or not finite")
        if not 0.0 <= row["depth"] <= 1.0:
            fail(f"{path} line {i}: depth {row['depth']:g} is outside [0, 1]")
        if row["train_len"] <= 0 or row["eval_len"] <= 0:
            fail(f"{path} line {i}: train_len and eval_len must be positive")
        row["where"] = f"{path} line {i}"
        row["ratio"] = row["eval_len"] / row["train_len"]
        out.append(row)
    return out


def load_all(paths, metric):
    rows, seen = [], {}
    for p in paths:
        for row in load(p):
            key = tuple(row[c] for c in KEY)
            if key in seen:
                fail(f"{row['where']}: a second row for {row['variant']}, seed {row['seed']:g}, eval_len "
                     f"{row['eval_len']:g}, depth {row['depth']:g} (first at {seen[key]}); averaging would weight "
                     f"that seed twice")
            seen[key] = row["where"]
            rows.append(row)
    if not any(math.isfinite(r[metric]) for r in rows):
        fail(f"no row has a value in column {metric}")
    return rows


def schemes_in(rows):
    """The variants present (a swept experiment's schemes with their swept values), in the order of their schemes."""
    present = {r["variant"] for r in rows}
    return sorted(present, key=lambda v: (scheme_rank(v.split(" ")[0]), v))


def length_label(ratio):
    return f"{ratio:g}x" if abs(ratio - round(ratio)) < 1e-9 else f"{ratio:.2g}x"


def grid(rows, metric, lengths, depths):
    """(depth x length) means over seeds of the metric (NaN where no seed has a value), and seed counts."""
    mean = np.full((len(depths), len(lengths)), np.nan)
    seeds = np.zeros((len(depths), len(lengths)), dtype=int)
    cells = {}
    for r in rows:
        if math.isfinite(r[metric]):
            cells.setdefault((r["depth"], r["ratio"]), []).append(r[metric])
    for i, d in enumerate(depths):
        for j, L in enumerate(lengths):
            v = cells.get((d, L))
            if v:
                mean[i, j] = float(np.mean(v))
                seeds[i, j] = len(v)
    return mean, seeds


def seeds_text(counts):
    counts = [c for c in counts if c > 0]
    if not counts:
        return "0"
    lo, hi = min(counts), max(counts)
    return f"{lo}" if lo == hi else f"{lo}–{hi}"


def cell_text(v, metric):
    if not math.isfinite(v):
        return "–"
    if metric == "key_bits_per_byte":
        return f"{v:.2f}"
    return "1" if v >= 0.995 else f"{v:.2f}"[1:]  # ".87": the leading zero only crowds the cell


def main():
    args = arguments()
    metric = args.metric
    what, cmap_name, higher_better = METRICS[metric]
    rows = load_all(args.csv, metric)
    # Lengths are multiples of each run's own training length.
    trained_at = ", ".join(f"{t:g}" for t in sorted({r["train_len"] for r in rows}))
    schemes = schemes_in(rows)
    lengths = sorted({r["ratio"] for r in rows})
    depths = sorted({r["depth"] for r in rows})
    tables = {s: grid([r for r in rows if r["variant"] == s], metric, lengths, depths) for s in schemes}

    values = np.concatenate([m[np.isfinite(m)] for m, _ in tables.values()])
    if metric == "key_bits_per_byte":
        vmin, vmax = 0.0, max(CHANCE_BITS, float(values.max()))
    else:
        vmin, vmax = 0.0, 1.0
    if values.min() < vmin or (metric != "key_bits_per_byte" and values.max() > vmax):
        fail(f"{metric} has values outside [{vmin:g}, {vmax:g}] ({values.min():g} to {values.max():g})")
    cmap = plt.get_cmap(cmap_name).copy()
    cmap.set_bad("0.85")

    n = len(schemes)
    ncol = min(PER_ROW, n)
    nrow = math.ceil(n / ncol)
    pw = max(2.4, 0.42 * len(lengths) + 0.9)
    ph = max(1.6, 0.3 * len(depths) + 0.9)
    fig, axes = plt.subplots(nrow, ncol, figsize=(pw * ncol + 1.2, ph * nrow + 1.3), squeeze=False,
                             sharex=True, sharey=True, constrained_layout=True)
    fs = 6.5 if len(lengths) <= 7 else 5.5
    im = None
    for k, s in enumerate(schemes):
        ax = axes[k // ncol][k % ncol]
        mean, seeds = tables[s]
        im = ax.imshow(np.ma.masked_invalid(mean), cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto",
                       interpolation="nearest")
        for i in range(len(depths)):
            for j in range(len(lengths)):
                v = mean[i, j]
                if math.isfinite(v):
                    r, g, b, _ = cmap((v - vmin) / (vmax - vmin) if vmax > vmin else 0.5)
                    colour = "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"
                else:
                    colour = "0.4"
                ax.text(j, i, cell_text(v, metric), ha="center", va="center", fontsize=fs, color=colour)
        used = seeds_text(seeds.ravel().tolist())
        ax.set_title(f"{s} ({used} seed{'' if used == '1' else 's'})", fontsize=9 if len(s) < 40 else 6)
        ax.set_xticks(range(len(lengths)))
        ax.set_xticklabels([length_label(x) for x in lengths], fontsize=7)
        ax.set_yticks(range(len(depths)))
        ax.set_yticklabels([f"{d:g}" for d in depths], fontsize=7)
        ax.tick_params(length=2, labelbottom=True, labelleft=k % ncol == 0)
        if k % ncol == 0:
            ax.set_ylabel("key depth", fontsize=8)
        if k // ncol == nrow - 1 or k + ncol >= n:
            ax.set_xlabel("eval length / train length", fontsize=8)
    for k in range(n, nrow * ncol):
        axes[k // ncol][k % ncol].set_visible(False)

    cb = fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.9 if nrow > 1 else 1.0, aspect=30 if nrow > 1 else 15,
                      pad=0.02)
    if metric == "key_bits_per_byte":
        cb.set_label("bits per key digit (colours reversed: lower is better)", fontsize=8)
        line, chance = CHANCE_BITS, "chance marked in red on the colour bar"
    else:
        cb.set_label(what.split(" (")[0] + " (higher is better)", fontsize=8)
        line = 0.1 if metric == "digit_accuracy" else None
        chance = ("chance marked in red on the colour bar" if line is not None
                  else "chance for a whole key of k digits is $0.1^k$")
    if line is not None:
        cb.ax.axhline(line, color="red", lw=1.2)
        ticks = [t for t in cb.get_ticks() if vmin <= t <= vmax and abs(t - line) > 0.06 * (vmax - vmin)]
        cb.set_ticks(ticks + [line])
        cb.set_ticklabels([f"{t:g}" for t in ticks] + [f"chance {line:.3g}"])
    cb.ax.tick_params(labelsize=7)
    gaps = any(np.isnan(m).any() for m, _ in tables.values())
    fig.suptitle(f"Passkey retrieval, trained at {trained_at} bytes: {what}, mean over seeds\n"
                 f"depth 0 = key at the start of the context, 1 = just before the question{'; grey = no data' if gaps else ''}\n"
                 f"chance per digit: accuracy 0.1, $\\log_2 10$ = {CHANCE_BITS:.2f} bits; {chance}", fontsize=9)
    save(fig, args.out)

    head = ["scheme", "seeds"] + [length_label(x) for x in lengths]
    print(f"{metric}, mean over seeds and over {len(depths)} depths (trained at {trained_at} bytes; columns: evaluation "
          f"length; {'lower' if not higher_better else 'higher'} is better)")
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join(["---"] * 2 + ["---:"] * len(lengths)) + "|")
    for s in schemes:
        mean, seeds = tables[s]
        cells = []
        for j in range(len(lengths)):
            col = mean[:, j]
            ok = col[np.isfinite(col)]
            if len(ok) == 0:
                cells.append("–")
            else:
                cells.append(f"{ok.mean():.3f}" + ("*" if len(ok) < len(col) else ""))
        print("| " + " | ".join([s, seeds_text(seeds.ravel().tolist())] + cells) + " |")
    if gaps:
        print("(* mean over the depths that have a value; empty cells are grey in the figure)")


if __name__ == "__main__":
    main()
