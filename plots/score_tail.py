"""Score tails against the paper's bounds (Theorem 2, Theorem 5, Remark 3):
Pr[q^T P_n k >= s] per threshold s on a log axis, with one-sided
Clopper-Pearson limits, the bound, the exact (or reference) Haar tail and the
union over M routes. Reads `routelab sim score-tail` CSV; one panel per
(family, normals, d, n)."""
import math

from common import arguments, num, plt, read_rows, save


def panel_key(r):
    return (r.get("family", ""), r.get("normals", ""), r.get("d", ""), r.get("a", ""), int(r["n"]))


def label_of(key):
    family, normals, d, a, n = key
    if family == "so2":
        return f"SO(2) blocks, d={d}, a={a}, n={n} (Theorem 2)"
    if family == "householder" and normals == "coordinate":
        return f"Householder, coordinate normals, d={d}, n={n} (Remark 3)"
    return f"{family} {normals}, d={d}, n={n} (Theorem 5)".replace("  ", " ")


def main():
    args = arguments(__doc__)
    rows = [r for r in read_rows(*args.csv) if r.get("n") and r.get("s")]
    keys = sorted({panel_key(r) for r in rows})
    cols = min(3, len(keys))
    nrows = math.ceil(len(keys) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.6 * cols, 3.6 * nrows), squeeze=False)
    for ax, key in zip(axes.flat, keys):
        here = [r for r in rows if panel_key(r) == key]

        def series(quantity_prefix):
            pts = [r for r in here if r["quantity"].startswith(quantity_prefix)]
            return sorted(pts, key=lambda r: num(r, "s"))

        one = series("tail_exceeds_levy") + [r for r in series("tail") if r["quantity"] == "tail"]
        one.sort(key=lambda r: num(r, "s"))
        s = [num(r, "s") for r in one]
        est = [num(r, "estimate") for r in one]
        lo = [max(num(r, "ci_low"), 1e-12) for r in one]
        hi = [num(r, "ci_high") for r in one]
        bound = [num(r, "theory") for r in one]
        name = "Hoeffding $e^{-B(s-\\mathbb{E}S_n)^2/2}$" if key[0] == "so2" else "Lévy $2e^{-(d-1)s^2/2}$"
        pos = [i for i, e in enumerate(est) if e > 0]
        ax.errorbar([s[i] for i in pos], [est[i] for i in pos],
                    yerr=[[est[i] - lo[i] for i in pos], [hi[i] - est[i] for i in pos]],
                    fmt="o", ms=4, capsize=2, color="C0", label=r"$\Pr[q^\top P_n k \geq s]$ (CP, $1-3\cdot10^{-7}$)")
        zero = [(x, h) for x, e, h in zip(s, est, hi) if e == 0]
        if zero:
            ax.plot([x for x, _ in zero], [h for _, h in zero], "v", color="C0", ms=5, label="no hits: CP upper")
        ax.plot(s, bound, "-", color="C3", label=name)
        ref = series("tail_vs_exact_law") or series("tail_haar_reference")
        if ref:
            exact = ref[0]["quantity"] == "tail_vs_exact_law"
            ax.plot([num(r, "s") for r in ref], [num(r, "theory") for r in ref], "--", color="k",
                    label="exact law" if exact else "Haar tail (reference)")
        union = series("max_of_M_tail")
        if union and key[2]:
            m = union[0].get("M", "M")
            pts = [(num(r, "s"), num(r, "estimate")) for r in union if num(r, "estimate") > 0]
            ax.plot([x for x, _ in pts], [e for _, e in pts], "s", mfc="none", color="C2", ms=4,
                    label=rf"$\Pr[\max_{{j\leq {m}}} q^\top P_j k \geq s]$")
            ax.plot([num(r, "s") for r in union], [num(r, "theory") for r in union], ":", color="C2",
                    label=f"union bound, M={m}")
        ax.set_yscale("log")
        ax.set_ylim(1e-8, 2)
        ax.axhline(1, color="0.7", lw=0.8)
        ax.set_xlabel("$s$")
        ax.set_ylabel(r"$\Pr[\,\cdot \geq s]$")
        ax.set_title(label_of(key), fontsize=9)
        ax.legend(fontsize=6.5, loc="lower left")
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    fig.tight_layout()
    save(fig, args.out)


if __name__ == "__main__":
    main()
