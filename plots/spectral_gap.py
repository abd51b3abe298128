"""Figure spectral-gap: the one-step gap beta = ||E M||_op of each step law
against the law's parameter (Assumption 1; Examples 1-4, the heat kernel, the
Matrix-Fisher example). Points are routelab's split-sample estimate with its
z = 5 interval; the line is the CSV's `theory` column at the swept points.

  /usr/bin/python3 plots/spectral_gap.py gap-so2.csv gap-givens.csv ... --out OUT/spectral-gap
"""
import math

import matplotlib.pyplot as plt

from common import arguments, num, read_rows, save, select

# family -> (swept column, x label, panel title); panels appear in this order.
PANELS = [
    ("so2", "a", r"$a$", r"Example 1, SO(2): $\beta = |\sin a / a|$"),
    ("givens", "a", r"$a$", r"Example 3, Givens: $\beta = |1 - 2(1 - \sin a/a)/d|$"),
    ("householder", "d", r"$d$", r"Example 2, Householder: $\beta = |1 - 2/d|$"),
    ("axis3", "theta", r"$\theta$", r"Example 4, 3D axis: $\beta = |2\cos\theta + 1|/3$"),
    ("heat", "tau", r"$\tau$", r"Heat kernel: $\beta = e^{-(d-1)\tau/2}$"),
    ("fisher", "kappa", r"$\kappa$", r"Matrix-Fisher, $A = \kappa I$: $\beta = I_1(2\kappa)/I_0(2\kappa)$"),
]

MARKERS = ["o", "s", "^", "D"]

# Columns that split one family's rows into separate series, if they vary.
SERIES_COLUMNS = ["d", "normals", "omega", "tau", "a"]


def series_of(rows, x_column):
    """Groups rows into series by the family flags that vary, other than x."""
    varying = [c for c in SERIES_COLUMNS if c != x_column and len({r.get(c, "") for r in rows}) > 1]
    constant = [c for c in SERIES_COLUMNS if c != x_column and c in rows[0] and rows[0][c] != ""
                and len({r[c] for r in rows}) == 1]
    groups = {}
    for r in rows:
        groups.setdefault(tuple(r.get(c, "") for c in varying), []).append(r)
    fixed = ", ".join(f"{c}={rows[0][c]}" for c in constant if c in ("d",))
    out = []
    for key, rs in groups.items():
        label = ", ".join(f"{c}={v}" for c, v in zip(varying, key))
        out.append((label, sorted(rs, key=lambda r: num(r, x_column))))
    return out, fixed


def main():
    args = arguments(__doc__)
    rows = select(read_rows(*args.csv), quantity="beta")
    panels = [p for p in PANELS if select(rows, family=p[0])]
    if not panels:
        raise SystemExit("spectral_gap.py: no beta rows of a known family in the input")
    cols = 3 if len(panels) > 2 else len(panels)
    nrows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.6 * cols, 3.5 * nrows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, (family, x_column, x_label, title) in zip(axes.flat, panels):
        series, fixed = series_of(select(rows, family=family), x_column)
        drawn = []  # theory columns already drawn: series sharing a closed form get one line
        for k, (label, rs) in enumerate(series):
            x = [num(r, x_column) for r in rs]
            est = [num(r, "estimate") for r in rs]
            low = [e - num(r, "ci_low") for e, r in zip(est, rs)]
            high = [num(r, "ci_high") - e for e, r in zip(est, rs)]
            theory = [num(r, "theory") for r in rs]
            color = f"C{k}"
            if (x, theory) not in drawn:
                shared = sum(1 for _, o in series if [num(r, "theory") for r in o] == theory) > 1
                ax.plot(x, theory, "-", color="k" if shared else color, lw=1.0, alpha=0.7,
                        label="closed form" + (f" ({label})" if label and not shared else ""), zorder=1)
                drawn.append((x, theory))
            ax.errorbar(x, est, yerr=[low, high], fmt=MARKERS[k % len(MARKERS)], ms=3.5, color=color, mfc="white",
                        capsize=2, lw=0.8, label="estimate, $z=5$ interval" + (f" ({label})" if label else ""))
        ax.set_title(title + (f", {fixed}" if fixed else ""), fontsize=9)
        ax.set_xlabel(x_label)
        ax.set_ylabel(r"$\beta = \|\mathbb{E}M\|_{\mathrm{op}}$")
        ax.set_ylim(bottom=min(0.0, ax.get_ylim()[0]))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    save(fig, args.out)


if __name__ == "__main__":
    main()
