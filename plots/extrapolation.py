"""Length extrapolation of the transformer experiment (paper, Section 7): bits
per byte against the evaluation window length (log axis, multiples of the
training length), one line per positional scheme, and bits per byte by
position inside the window at the longest evaluation length. Each line is the
mean over seeds; the band is +-1 s.d. over seeds when a point has 3 or more,
min-max when it has 2, none with 1. Reads `routelab experiment` CSVs (results
and -positions); averages over seeds, recomputes nothing else. Prints a
scheme x length table of the means to stdout. A swept experiment's CSV has a
column per swept key: each scheme's variants (its rows with other swept
values) get a line of their own. Training lengths may differ between runs:
the lengths are multiples of each run's own."""
import argparse
import math
import sys

import numpy as np

from common import label_variants, plt, read_checked, save

RESULT_COLUMNS = ["scheme", "seed", "train_len", "eval_len", "windows", "tokens", "bits_per_byte", "ppl"]
POSITION_COLUMNS = ["scheme", "seed", "train_len", "eval_len", "pos_lo", "pos_hi", "tokens", "bits_per_byte"]

# One hue per family; QK-only rotation dashed, QKV solid (rope is QK-only).
ORDER = ["nope", "alibi", "rope", "rope_qkv", "random_qk", "random_qkv", "learned_qk", "learned_qkv",
         "householder_qk", "householder_qkv"]
STYLE = {
    "nope": dict(color="0.55", ls="-", marker="o"),
    "alibi": dict(color="black", ls="-", marker="o"),
    "rope": dict(color="tab:orange", ls="--", marker="o", mfc="white"),
    "rope_qkv": dict(color="tab:orange", ls="-", marker="o"),
    "random_qk": dict(color="tab:blue", ls="--", marker="o", mfc="white"),
    "random_qkv": dict(color="tab:blue", ls="-", marker="o"),
    "learned_qk": dict(color="tab:green", ls="--", marker="o", mfc="white"),
    "learned_qkv": dict(color="tab:green", ls="-", marker="o"),
    "householder_qk": dict(color="tab:purple", ls="--", marker="s", mfc="white"),
    "householder_qkv": dict(color="tab:purple", ls="-", marker="s"),
}


def fail(message):
    print(f"extrapolation.py: {message}", file=sys.stderr)
    sys.exit(2)


def arguments():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", help="results CSV written by routelab experiment")
    ap.add_argument("--positions", help="its positions CSV (default: CSV's name with -positions.csv)")
    ap.add_argument("--out", required=True, help="output path without extension (.png and .pdf are written)")
    args = ap.parse_args()
    if args.positions is None:
        stem = args.csv[:-4] if args.csv.endswith(".csv") else args.csv
        args.positions = stem + "-positions.csv"
    return args


def load(path, columns, what):
    """Rows of one CSV with the given columns, numbers parsed, each with its
    variant; one line and exit 2 otherwise."""
    out, seen = [], set()
    for i, row in label_variants(path, read_checked(path, columns, what, "extrapolation.py"), columns):
        keys = [c for c in columns if c in ("seed", "train_len", "eval_len", "pos_lo")]
        key = (row["variant"],) + tuple(row[c] for c in keys)
        if key in seen:
            named = ", ".join([row["variant"]] + [f"{c} {row[c]:g}" for c in keys])
            fail(f"{path} line {i}: a second row for {named}; averaging would weight that seed twice")
        seen.add(key)
        row["ratio"] = row["eval_len"] / row["train_len"]
        out.append(row)
    return out


def schemes_in(rows):
    """The variants present, in ORDER of their schemes, then by name."""
    present = {r["variant"] for r in rows}
    rank = {s: k for k, s in enumerate(ORDER)}
    return sorted(present, key=lambda v: (rank.get(v.split(" ")[0], len(ORDER)), v))


def style_of(variant, k, swept):
    scheme = variant.split(" ")[0]
    if scheme in STYLE and (not swept or variant == scheme):
        return dict(STYLE[scheme])
    # Variants of a sweep: a colour each; QK-only rotation dashed as above.
    qk_only = scheme.endswith("_qk") or scheme == "rope"
    return dict(color=plt.get_cmap("tab20")(k % 20), ls="--" if qk_only else "-", marker="o",
                mfc="white" if qk_only else None)


def over_seeds(rows, x_of):
    """x -> (mean, band low, band high, seeds) of bits_per_byte over seeds."""
    by_x = {}
    for r in rows:
        by_x.setdefault(x_of(r), []).append(r["bits_per_byte"])
    out = {}
    for x, v in sorted(by_x.items()):
        v = np.asarray(v, dtype=float)
        m = float(np.mean(v))
        if len(v) >= 3:
            sd = float(np.std(v, ddof=1))
            lo, hi = m - sd, m + sd
        elif len(v) == 2:
            lo, hi = float(v.min()), float(v.max())
        else:
            lo = hi = m
        out[x] = (m, lo, hi, len(v))
    return out


def legend_note(counts):
    counts = set(counts)
    if counts == {1}:
        return "one seed (no band)"
    lines = f"lines: mean over {next(iter(counts))} seeds" if len(counts) == 1 else "lines: mean over seeds"
    return lines + "; " + band_note(counts)


def band_note(counts):
    counts = set(counts)
    parts = []
    if any(n >= 3 for n in counts):
        parts.append(r"$\pm$1 s.d. over seeds")
    if 2 in counts:
        parts.append("min–max over 2 seeds")
    text = "band: " + " or ".join(parts)
    return text + (" (1 seed: none)" if 1 in counts else "")


def seeds_text(counts):
    lo, hi = min(counts), max(counts)
    return f"{lo}" if lo == hi else f"{lo}–{hi}"


def draw(ax, stats, st, label):
    xs = list(stats)
    mean = [stats[x][0] for x in xs]
    ax.plot(xs, mean, color=st["color"], ls=st["ls"], marker=st["marker"], mfc=st.get("mfc") or st["color"],
            ms=3.5, lw=1.4, label=label)
    if any(stats[x][3] > 1 for x in xs):
        ax.fill_between(xs, [stats[x][1] for x in xs], [stats[x][2] for x in xs], color=st["color"], alpha=0.15,
                        lw=0)


def length_label(ratio):
    return f"{ratio:g}x" if abs(ratio - round(ratio)) < 1e-9 else f"{ratio:.2g}x"


def main():
    args = arguments()
    results = load(args.csv, RESULT_COLUMNS, "results")
    positions = load(args.positions, POSITION_COLUMNS, "positions")
    train = sorted({r["train_len"] for r in results} | {r["train_len"] for r in positions})
    mixed = len(train) > 1
    T = train[0]
    swept = any(r["variant"] != r["scheme"] for r in results)
    schemes = schemes_in(results)
    ratios = sorted({r["ratio"] for r in results})

    fig, (left, right) = plt.subplots(1, 2, figsize=(11.0, 4.3 if len(schemes) <= 12 else 5.5))
    counts, table = [], {}
    for s in schemes:
        table[s] = over_seeds([r for r in results if r["variant"] == s], lambda r: r["ratio"])
        counts += [v[3] for v in table[s].values()]
    same = len(set(counts)) == 1  # every point has the same number of seeds: say it once
    for k, s in enumerate(schemes):
        stats = table[s]
        n = sorted({v[3] for v in stats.values()})
        draw(left, stats, style_of(s, k, swept), s if same else f"{s} ({seeds_text(n)} seed{'s' if max(n) > 1 else ''})")
    left.axvline(1, color="0.3", ls=":", lw=1.2)
    left.text(1, 0.98, " training\n length", transform=left.get_xaxis_transform(), fontsize=7, color="0.3",
              va="top")
    left.set_xscale("log", base=2)
    left.set_xticks(ratios)
    left.set_xticklabels([length_label(x) for x in ratios])
    left.minorticks_off()
    trained_at = ", ".join(f"{t:g}" for t in train) + " bytes"
    left.set_xlabel(f"evaluation window length (multiples of the training length, {trained_at})")
    left.set_ylabel("bits per byte (validation, lower is better)")
    left.set_title("Bits per byte as the evaluation window grows", fontsize=10)
    left.grid(True, alpha=0.3)

    # Positions: in bytes for one training length, in multiples of it for several.
    unit = (lambda r: r["train_len"]) if mixed else (lambda r: 1.0)
    longest = max(r["ratio"] for r in positions)
    at = [r for r in positions if r["ratio"] == longest]
    absent = [s for s in schemes_in(positions) if not any(r["variant"] == s for r in at)]
    if absent:
        print(f"extrapolation.py: no positions at {length_label(longest)} for {', '.join(absent)}; not drawn",
              file=sys.stderr)
    pos_counts = []
    for k, s in enumerate(schemes_in(positions)):
        here = [r for r in at if r["variant"] == s]
        if not here:
            continue
        stats = over_seeds(here, lambda r: (r["pos_lo"] + r["pos_hi"]) / 2 / unit(r))
        pos_counts += [v[3] for v in stats.values()]
        draw(right, stats, style_of(s, k, swept), None)
    mark = 1 if mixed else T
    right.axvline(mark, color="0.3", ls=":", lw=1.2)
    right.text(mark, 0.02, " training length" + ("" if mixed else f" {T:g}"), transform=right.get_xaxis_transform(),
               fontsize=7, color="0.3", va="bottom")
    right.set_xscale("log", base=2)
    top = longest * (1 if mixed else T)
    first = int(math.log2(top)) - 10 if mixed else -1
    ticks = [2.0 ** e for e in range(first, int(math.log2(top)) + 1)]
    right.set_xticks(ticks)
    right.set_xticklabels([f"{t:g}" for t in ticks], fontsize=8 if len(ticks) < 13 else 7)
    right.minorticks_off()
    if mixed:
        right.set_xlabel("position in the window (multiples of the run's training length; bin midpoints)")
        right.set_title(f"Bits per byte by position in a window of {length_label(longest)} the training length",
                        fontsize=10)
    else:
        right.set_xlabel("position in the window (bytes; midpoints of bins [0,1), [1,2), [2,4), …)")
        right.set_title(f"Bits per byte by position in a {longest * T:g}-byte window ({length_label(longest)} "
                        f"the training length)", fontsize=10)
    right.set_ylabel("bits per byte")
    right.grid(True, alpha=0.3)
    # One legend for both panels (same scheme, same line), below them.
    handles, labels = left.get_legend_handles_labels()
    fig.tight_layout()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(2 if swept else 4, len(labels)),
               fontsize=8, frameon=False,
               title=f"{legend_note(counts + pos_counts)}; dashed: QK-only rotation, solid: QK and V",
               title_fontsize=8)
    save(fig, args.out)

    head = ["scheme", "seeds"] + [length_label(x) for x in ratios]
    print(f"bits per byte, mean over seeds (trained at {trained_at}; columns: evaluation length)")
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join(["---"] * 2 + ["---:"] * len(ratios)) + "|")
    for s in schemes:
        n = sorted({v[3] for v in table[s].values()})
        cells = [f"{table[s][x][0]:.3f}" if x in table[s] else "–" for x in ratios]
        print("| " + " | ".join([s, seeds_text(n)] + cells) + " |")


if __name__ == "__main__":
    main()
