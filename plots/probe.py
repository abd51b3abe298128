"""Far mass inside trained models (routelab probe; paper §4, Proposition 3):
one panel per positional scheme, the attention far mass rho_D (keys more than
W back) against the evaluation length (log2 axis, multiples of the training
length), one line per layer (mean over its heads and over seeds), and beside
each, dashed, the mean of Proposition 3's lower bound M/(M + K e^{2 lambda})
from each row's measured logit range. Reads the probe CSV (and, with
--angles, its -angles CSV); recomputes nothing. Prints to stdout a scheme x
length table of the far mass (mean over layers and heads) and, with --angles,
each layer's decorrelation distances (median and max of the blocks' mixing
windows) beside twice the training length."""
import argparse
import math
import sys

import numpy as np

from common import fail, plt, read_checked, save, scheme_rank

SCRIPT = "probe.py"
COLUMNS = ["scheme", "seed", "train_len", "eval_len", "window", "layer", "head", "queries", "far_mass",
           "far_norm", "entropy", "logit_range", "far_mass_lower_bound", "far_mass_last_bin", "bound_violations"]
ANGLE_COLUMNS = ["scheme", "seed", "train_len", "layer", "block", "eps", "beta", "mixing_window",
                 "layer_window_median", "layer_window_max"]


def arguments():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", help="probe CSV written by routelab probe")
    ap.add_argument("--angles", help="its -angles CSV (a table of decorrelation distances to stdout)")
    ap.add_argument("--out", required=True, help="output path without extension (.png and .pdf are written)")
    return ap.parse_args()


def ordered(schemes):
    return sorted(set(schemes), key=scheme_rank)


def length_label(ratio):
    return f"{ratio:g}x" if abs(ratio - round(ratio)) < 1e-9 else f"{ratio:.2g}x"


def mean_by(rows, key, value):
    """key(row) -> mean of value over the rows sharing it."""
    groups = {}
    for r in rows:
        groups.setdefault(key(r), []).append(r[value])
    return {k: float(np.mean(v)) for k, v in sorted(groups.items())}


def cell(x):
    return f"{x:.3f}" if x >= 1e-3 else f"{x:.1e}"


def window_text(x):
    return "never" if math.isinf(x) else f"{x:g}"


def main():
    args = arguments()
    rows = [r for _, r in read_checked(args.csv, COLUMNS, "probe", SCRIPT)]
    train = sorted({r["train_len"] for r in rows})
    windows = sorted({r["window"] for r in rows})
    if len(train) != 1 or len(windows) != 1:
        fail(SCRIPT, f"{args.csv} mixes training lengths or windows; plot one probe at a time")
    T, W = train[0], windows[0]
    violations = sum(r["bound_violations"] for r in rows)
    if violations:
        print(f"{SCRIPT}: {violations:g} rows fall below Proposition 3's bound", file=sys.stderr)
    schemes = ordered({r["scheme"] for r in rows})
    lengths = sorted({r["eval_len"] for r in rows})
    layers = sorted({r["layer"] for r in rows})

    cols = min(4, len(schemes))
    nrows = math.ceil(len(schemes) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(3.2 * cols, 2.7 * nrows), sharex=True, sharey=True,
                             squeeze=False)
    floor = 1e-6
    for k, s in enumerate(schemes):
        ax = axes[k // cols][k % cols]
        here = [r for r in rows if r["scheme"] == s]
        for li, layer in enumerate(layers):
            at = [r for r in here if r["layer"] == layer]
            rho = mean_by(at, lambda r: r["eval_len"], "far_mass")
            bound = mean_by(at, lambda r: r["eval_len"], "far_mass_lower_bound")
            color = plt.cm.viridis(li / max(1, len(layers) - 1) * 0.85)
            ax.plot(list(rho), [max(v, floor) for v in rho.values()], color=color, marker="o", ms=3, lw=1.3,
                    label=f"layer {layer:g}")
            ax.plot(list(bound), [max(v, floor) for v in bound.values()], color=color, ls="--", lw=1.0)
        top = max(r["far_mass"] for r in here)
        if top < floor:
            ax.text(0.5, 0.5, f"far mass below {top:.1e}\nat every length and layer", transform=ax.transAxes,
                    ha="center", va="center", fontsize=8)
        ax.set_title(s, fontsize=9)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_ylim(floor, 1.5)
        ax.axvline(T, color="0.5", ls=":", lw=1)
        ax.grid(True, alpha=0.3)
    for k in range(len(schemes), nrows * cols):
        axes[k // cols][k % cols].axis("off")
    for ax in axes[-1]:
        ax.set_xticks(lengths)
        ax.set_xticklabels([length_label(L / T) for L in lengths], fontsize=7)
        ax.minorticks_off()
    for row in axes:
        row[0].set_ylabel(r"far mass $\rho_D$")
    fig.supxlabel(f"evaluation window length (multiples of the training length, {T:g} bytes)", fontsize=9)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.tight_layout()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=len(labels), fontsize=8,
               frameon=False,
               title=f"solid: far mass (weight on keys more than {W:g} back), mean over heads; dashed: "
                     f"Proposition 3's lower bound from each row's logit range (values below {floor:g} drawn "
                     f"at {floor:g}); dotted: training length", title_fontsize=8)
    save(fig, args.out)

    print(f"far mass rho_D (keys more than {W:g} back), mean over layers and heads; trained at {T:g} bytes")
    print("| scheme | " + " | ".join(length_label(L / T) for L in lengths) + " |")
    print("|---|" + "---:|" * len(lengths))
    for s in schemes:
        m = mean_by([r for r in rows if r["scheme"] == s], lambda r: r["eval_len"], "far_mass")
        print(f"| {s} | " + " | ".join(cell(m[L]) if L in m else "–" for L in lengths) + " |")

    if args.angles:
        angles = [r for _, r in read_checked(args.angles, ANGLE_COLUMNS, "probe angles", SCRIPT)]
        print()
        print(f"decorrelation distance per layer (bytes): median / max over blocks of the mixing window "
              f"(eps = {angles[0]['eps']:g}); twice the training length = {2 * T:g}")
        print("| scheme | layer | median | max | blocks mixed within 2x | max beta |")
        print("|---|---:|---:|---:|---:|---:|")
        for s in ordered({r["scheme"] for r in angles}):
            for layer in sorted({r["layer"] for r in angles if r["scheme"] == s}):
                at = [r for r in angles if r["scheme"] == s and r["layer"] == layer]
                mixed = sum(1 for r in at if r["mixing_window"] <= 2 * T)
                print(f"| {s} | {layer:g} | {window_text(at[0]['layer_window_median'])} | "
                      f"{window_text(at[0]['layer_window_max'])} | {mixed}/{len(at)} | "
                      f"{max(r['beta'] for r in at):.4f} |")


if __name__ == "__main__":
    main()
