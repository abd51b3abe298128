"""Value interference against context length L (B.8, Theorem 7): the far
transport's operator norm ||T_D|| = max_b |t_b| for position-only (RoPE)
value transport, no value transport (QK-only: |t_b| = rho_D), and accumulated
phases (QKV), with Theorem 7's bound. Reads `routelab sim value-transport
--part coherence` rows; draws, never recomputes."""
import matplotlib.pyplot as plt

from common import arguments, num, read_rows, save, select


def series(rows, quantity, column="estimate"):
    pts = sorted((num(r, "L"), num(r, column), num(r, "stderr")) for r in select(rows, quantity=quantity))
    return [p[0] for p in pts], [p[1] for p in pts], [p[2] for p in pts]


def main():
    args = arguments(__doc__)
    rows = select(read_rows(*args.csv), sim="value-transport")
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    L, q, _ = series(rows, "max_b_q_position_only")
    ax.plot(L, q, "s-", color="tab:orange", label=r"position-only (RoPE) $\max_b q_{b,L}$")
    L, rho, _ = series(rows, "rho_D_qk_only")
    ax.plot(L, rho, "k--", label=r"QK-only: $|t_b| = \rho_D$")
    L, t, se = series(rows, "mean_max_t_accumulated")
    ax.errorbar(L, t, yerr=[5 * s for s in se], fmt="o-", color="tab:blue", capsize=2,
                label=r"QKV accumulated $\max_b |t_b|$ (mean $\pm 5$ SE)")
    L, bound, _ = series(rows, "bound")
    ax.plot(L, bound, ":", color="tab:red", label=r"Theorem 7 bound ($\eta$ = 0.05)")
    first = rows[0]
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(r"context length $L$")
    ax.set_ylabel(r"far value interference $\|T_D\|_{op}$")
    ax.set_title(r"$d = {}$, far set $[{}, L]$, uniform weights, $\rho_D = {}$, $a = {}$".format(
        2 * int(num(first, "blocks")), first["w"], first["rho"], first["a"]), fontsize=9)
    ax.legend(fontsize=7.5, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    ax.grid(True, which="both", alpha=0.3)
    save(fig, args.out)


if __name__ == "__main__":
    main()
