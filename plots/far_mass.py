"""Far mass rho_D against the far-set size M_L (log axis): the mean over
nested routes of the chosen step law (near logits at +lambda, far logits
lambda q^T P k) with error bars of one standard error, and Proposition 3's lower
bound M_L/(M_L + K e^{2 lambda}) (the `theory` column) as a line, one colour
per (lambda, K). Reads `routelab sim far-mass` CSV; recomputes nothing."""
import matplotlib.pyplot as plt

from common import arguments, num, read_rows, save, select


def main():
    args = arguments(__doc__.splitlines()[0])
    rows = select(read_rows(*args.csv), sim="far-mass", result="Proposition 3 (B.6)", quantity="far_mass")
    curves = {}
    for r in rows:
        curves.setdefault((num(r, "lambda"), int(num(r, "K"))), []).append(r)
    routes = sorted({r.get("routes", "") for r in rows})
    laws = sorted({f"{r.get('family', '')} $d={r.get('d', '')}$" for r in rows})
    fig, ax = plt.subplots(figsize=(6.0, 4.0))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, ((lam, K), rs) in enumerate(sorted(curves.items())):
        rs.sort(key=lambda r: num(r, "ML"))
        ml = [num(r, "ML") for r in rs]
        est = [num(r, "estimate") for r in rs]
        se = [num(r, "stderr") for r in rs]
        c = colours[k % len(colours)]
        ax.errorbar(ml, est, yerr=se, fmt="o-", color=c, ms=3, lw=1.2, capsize=2, label=rf"$\lambda={lam:g}$, $K={K}$")
        ax.plot(ml, [num(r, "theory") for r in rs], "--", color=c, lw=1.2)
    ax.plot([], [], "k-", lw=1.2, label=f"routes ({', '.join(laws)}): mean $\\pm$ 1 s.e. over {'/'.join(routes)} routes")
    ax.plot([], [], "k--", lw=1.2, label=r"Prop. 3: $M_L/(M_L+K e^{2\lambda})$")
    ax.set_xscale("log")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(r"far-set size $M_L$")
    ax.set_ylabel(r"far mass $\rho_D$")
    ax.set_title(r"Full softmax: $\rho_D \to 1$ as $M_L \to \infty$ (Proposition 3)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right", title="solid: routes; dashed: bound", title_fontsize=7)
    save(fig, args.out)


if __name__ == "__main__":
    main()
