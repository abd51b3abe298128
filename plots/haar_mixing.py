"""Figure haar-mixing: the approach of P_n = M_n ... M_1 to Haar (Theorem 4,
Proposition 2, Remark 3, Example 6).
Left: the KS distance d_KS between the law of e_1^T P_n e_1 and its Haar law
(x + 1)/2 ~ Beta((d-1)/2, (d-1)/2) (Theorem 5), against n; the dotted line is
the CSV's `theory` column, the KS critical value at the sample size (below it
the walk is indistinguishable from Haar). Remark 3's coordinate normals never
get there.
Right: E (tr P_n)^2 with its z = 5 interval against n; the dashed line is the
`theory` column tr(T^n), T = E[M (x) M]. Uniform normals tend to the Haar
value 1, coordinate normals to d (Remark 3); heat dithering (Example 6)
restores 1.

  /usr/bin/python3 plots/haar_mixing.py haar-*.csv --out OUT/haar-mixing
"""
import matplotlib.pyplot as plt
from matplotlib.ticker import FixedLocator, NullFormatter, ScalarFormatter

from common import arguments, num, read_rows, save, select

NAMES = {
    "householder": "Householder",
    "givens": "Givens",
    "heat": "heat kernel",
    "dithered": "heat-dithered (Ex. 6)",
    "haar": "Haar",
    "so2": "SO(2) blocks",
}


def series_key(row):
    parts = [NAMES.get(row["family"], row["family"])]
    if row.get("normals", ""):
        parts.append(row["normals"] + " normals")
    parts.append(f"d={row['d']}")
    if row["family"] in ("givens", "so2"):
        parts.append(f"a={row['a']}")
    if row["family"] in ("heat", "dithered"):
        parts.append(f"tau={row['tau']}")
    return ", ".join(parts)


def grouped(rows):
    series = {}
    for r in rows:
        series.setdefault(series_key(r), []).append(r)
    for rs in series.values():
        rs.sort(key=lambda r: num(r, "n"))
    return series


def log2_n_axis(ax, ns):
    """A base-2 log axis of walk lengths labelled 1, 2, 4, ..., not 2^k."""
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(sorted(ns)))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(r"walk length $n$")


def main():
    args = arguments(__doc__)
    rows = read_rows(*args.csv)
    ks = grouped(select(rows, quantity="ks_to_haar_score_law"))
    tr2 = grouped([r for r in select(rows, quantity="mean_trace_squared") if r.get("theory", "") != ""])
    if not ks:
        raise SystemExit("haar_mixing.py: no ks_to_haar_score_law rows in the input")
    colors = {label: f"C{k}" for k, label in enumerate(ks)}

    fig, (left, right) = plt.subplots(1, 2, figsize=(11.5, 4.4))
    # Runs at one sample size share one critical value: then one black line.
    shared = len({r["theory"] for rs in ks.values() for r in rs}) == 1
    for label, rs in ks.items():
        n = [num(r, "n") for r in rs]
        left.plot(n, [num(r, "estimate") for r in rs], "o-", ms=3, lw=1, color=colors[label])
        if not shared:
            left.plot(n, [num(r, "theory") for r in rs], ":", color=colors[label], lw=1.2)
    if shared:
        all_n = sorted({num(r, "n") for rs in ks.values() for r in rs})
        critical = num(next(iter(ks.values()))[0], "theory")
        left.plot(all_n, [critical] * len(all_n), ":", color="k", lw=1.2)

    log2_n_axis(left, {num(r, "n") for rs in ks.values() for r in rs})
    left.set_yscale("log")
    left.set_ylabel(r"$d_{\mathrm{KS}}(e_1^\top P_n e_1,\ \mathrm{Haar})$")
    left.set_title(r"Theorem 4/5: KS distance to the Haar law of $e_1^\top P_n e_1$", fontsize=10)
    left.grid(alpha=0.3, which="both")

    for k, (label, rs) in enumerate(tr2.items()):
        color = colors.get(label, f"C{len(colors) + k}")
        n = [num(r, "n") for r in rs]
        est = [num(r, "estimate") for r in rs]
        low = [e - num(r, "ci_low") for e, r in zip(est, rs)]
        high = [num(r, "ci_high") - e for e, r in zip(est, rs)]
        right.plot(n, [num(r, "theory") for r in rs], "--", color=color, lw=1.2)
        right.errorbar(n, est, yerr=[low, high], fmt="o", ms=3, color=color, mfc="white", capsize=2, lw=0.8)
    log2_n_axis(right, {num(r, "n") for rs in tr2.values() for r in rs})
    right.set_yscale("log")
    right.set_ylabel(r"$\mathbb{E}(\mathrm{tr}\,P_n)^2$")
    right.set_title(r"Prop. 2 / Remark 3: $\mathbb{E}(\mathrm{tr}\,P_n)^2 \to 1$ (Haar) or $d$ (coordinate)",
                    fontsize=10)
    right.grid(alpha=0.3, which="both")
    # One legend for both panels, below them: the colours name the same walks.
    handles = [plt.Line2D([], [], color=c, marker="o", ms=4, lw=1, label=label) for label, c in colors.items()]
    handles.append(plt.Line2D([], [], ls=":", color="k", label=r"KS critical value at the sample size (left; theory column)"))
    handles.append(plt.Line2D([], [], ls="--", color="gray",
                              label=r"$\mathrm{tr}(T^n)$, $T = \mathbb{E}[M \otimes M]$ (right; theory column)"))
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    fig.legend(handles=handles, loc="lower center", ncol=2, fontsize=8, frameon=False)
    save(fig, args.out)


if __name__ == "__main__":
    main()
