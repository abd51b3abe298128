"""The paper's "random" variant (note after Example 1): the mean matched far
score E S_n = (1/B) sum_b beta_b^n against distance n (log axis), simulated and
closed form, and below it each block's first harmonic beta_b^n with the level
eps: the blocks above eps are the ones still carrying the score gap. Vertical
lines mark the transformer experiments' training length 128 and 64x it.
Reads `routelab sim random-variant` CSV."""
from common import arguments, num, plt, read_rows, save
import matplotlib as mpl


def main():
    args = arguments(__doc__)
    rows = read_rows(*args.csv)
    mean = sorted([r for r in rows if r["quantity"] == "mean_score"], key=lambda r: num(r, "n"))
    carried = sorted([r for r in rows if r["quantity"] == "mean_score_from_carrying_blocks"], key=lambda r: num(r, "n"))
    harm = [r for r in rows if r["quantity"] == "first_harmonic_re"]
    eps = num(rows[0], "eps")
    d = rows[0]["d"]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(6.4, 7.2), sharex=True)

    n = [num(r, "n") for r in mean]
    top.plot(n, [num(r, "theory") for r in mean], "-", color="k", label=r"$\mathbb{E}S_n=\frac{1}{B}\sum_b\beta_b^n$")
    top.errorbar(n, [num(r, "estimate") for r in mean], yerr=[5 * num(r, "stderr") for r in mean], fmt="o", ms=3,
                 color="C0", capsize=2, label=r"simulated $\hat{\mathbb{E}}S_n$ ($\pm5$ SE)")
    top.plot([num(r, "n") for r in carried], [num(r, "theory") for r in carried], "--", color="C1",
             label=rf"part from blocks with $\beta_b^n>\varepsilon={eps:g}$")
    top.set_ylabel(r"$\mathbb{E}S_n$")
    top.set_ylim(0, 1.02)
    top.set_title(f"random variant, d={d}: increments $U(-f_b,f_b)$, $f_b=10000^{{-2b/d}}$", fontsize=10)

    blocks = sorted({int(r["block"]) for r in harm})
    cmap = mpl.colormaps["viridis"]
    for b in blocks:
        pts = sorted([r for r in harm if int(r["block"]) == b], key=lambda r: num(r, "n"))
        color = cmap(b / max(1, max(blocks)))
        bottom.plot([num(r, "n") for r in pts], [num(r, "theory") for r in pts], "-", color=color, lw=1)
        bottom.plot([num(r, "n") for r in pts], [num(r, "estimate") for r in pts], ".", color=color, ms=3)
    bottom.axhline(eps, color="C3", lw=1, ls="--", label=rf"$\varepsilon={eps:g}$")
    bottom.set_yscale("log")
    bottom.set_ylim(1e-4, 1.5)
    bottom.set_ylabel(r"$\mathrm{Re}\,\mathbb{E}e^{i\Theta_{n,b}}=\beta_b^n$")
    bottom.set_xlabel("distance $n$ (tokens)")
    sm = mpl.cm.ScalarMappable(cmap=cmap, norm=mpl.colors.Normalize(0, max(blocks)))
    fig.colorbar(sm, ax=[top, bottom], shrink=0.5, anchor=(0.0, 0.0), label="block $b$ (lines: closed form, dots: simulated)")
    for ax in (top, bottom):
        ax.set_xscale("log")
        for x, name in ((128, "train 128"), (128 * 64, "64x")):
            ax.axvline(x, color="0.6", lw=0.8, ls=":")
            ax.text(x, 1.0 if ax is top else 2e-4, name, fontsize=7, color="0.4", rotation=90,
                    va="top" if ax is top else "bottom", ha="right")
    top.legend(fontsize=7, loc="lower right")
    bottom.legend(fontsize=7, loc="lower left")
    save(fig, args.out)


if __name__ == "__main__":
    main()
