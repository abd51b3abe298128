"""Figure moment-decay: ||E P_n||_op against the walk length n (Theorem 3,
B.5: E P_n = (E M)^n, so ||E P_n|| <= beta^n, with equality when E M is
normal). Points are routelab's split-sample estimate with its z = 5 interval;
the dashed line of the same colour is the CSV's `theory` column, beta^n.
Theorem 3's non-normal example sits strictly below its beta^n.

  /usr/bin/python3 plots/moment_decay.py moment-decay.csv --out OUT/moment-decay
"""
import matplotlib.pyplot as plt

from common import arguments, num, read_rows, save, select

# How each family's series is named: its label and the flags that identify it.
NAMES = {
    "householder": ("Householder (Ex. 2)", ["d", "normals"]),
    "so2": ("SO(2) block (Ex. 1)", ["d", "a"]),
    "givens": ("Givens (Ex. 3)", ["d", "a"]),
    "nonnormal": (r"non-normal $\mathbb{E}M$ (Thm 3)", ["d"]),
    "axis3": ("3D axis (Ex. 4)", ["d", "theta"]),
    "skewexp": ("skew exp (Ex. 5)", ["d", "a"]),
    "heat": ("heat kernel", ["d", "tau"]),
}


def series_key(row):
    name, flags = NAMES.get(row["family"], (row["family"], ["d"]))
    return name + ", " + ", ".join(f"{f}={row[f]}" for f in flags if row.get(f, "") not in ("", "sphere"))


def main():
    args = arguments(__doc__)
    rows = select(read_rows(*args.csv), quantity="norm_mean_product")
    if not rows:
        raise SystemExit("moment_decay.py: no norm_mean_product rows in the input")
    series = {}
    for r in rows:
        series.setdefault(series_key(r), []).append(r)
    # Left: laws with normal E M, where ||E P_n|| = beta^n; right: Theorem 3's
    # non-normal example, where it falls strictly below (its beta^n line would
    # hide under Givens', beta = 0.958 against 0.960).
    normal = {k: v for k, v in series.items() if v[0]["family"] != "nonnormal"}
    nonnormal = {k: v for k, v in series.items() if v[0]["family"] == "nonnormal"}
    panels = [(p, t) for p, t in ((normal, r"normal $\mathbb{E}M$: $\|\mathbb{E}P_n\|_{\mathrm{op}} = \beta^n$"),
                                  (nonnormal, r"non-normal $\mathbb{E}M$: $\|\mathbb{E}P_n\|_{\mathrm{op}} < \beta^n$"))
              if p]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.4 * len(panels), 4.2), squeeze=False)
    k = 0
    for ax, (group, title) in zip(axes[0], panels):
        theories = [num(r, "theory") for rs in group.values() for r in rs if num(r, "theory") > 0]
        for label, rs in group.items():
            rs.sort(key=lambda r: num(r, "n"))
            n = [num(r, "n") for r in rs]
            est = [num(r, "estimate") for r in rs]
            low = [e - num(r, "ci_low") for e, r in zip(est, rs)]
            high = [num(r, "ci_high") - e for e, r in zip(est, rs)]
            color = f"C{k}"
            ax.plot(n, [num(r, "theory") for r in rs], "--", color=color, lw=1.2)
            ax.errorbar(n, est, yerr=[low, high], fmt="osD^v"[k % 5], ms=3.5, color=color, mfc="white", capsize=2,
                        lw=0.8, label=label)
            k += 1
        # The axis reaches the smallest estimate whose interval excludes 0; an
        # interval reaching 0 is clipped at the bottom of the log axis.
        resolved = [num(r, "estimate") for rs in group.values() for r in rs if num(r, "ci_low") > 0]
        ax.set_yscale("log", nonpositive="clip")
        ax.set_ylim(bottom=0.3 * min(theories + resolved), top=1.3)
        ax.plot([], [], "--", color="gray", label=r"$\beta^n$ (theory column)")
        ax.set_xlabel(r"walk length $n$")
        ax.set_ylabel(r"$\|\mathbb{E}P_n\|_{\mathrm{op}}$ (estimate, $z=5$ interval)")
        ax.set_title("Theorem 3, " + title, fontsize=10)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    fig.tight_layout()
    save(fig, args.out)


if __name__ == "__main__":
    main()
