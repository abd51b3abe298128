#!/usr/bin/env python3
"""The margin by which each of the paper's claims holds, setting by setting:
one panel per claim, the settings on the x axis, each seed a point (one
colour per subject), the mean as a bar; 0 (dashed) is where a claim flips.
Reads `routelab claims --csv`; never recomputes a margin."""
import sys

from common import arguments, plt, read_rows, save, fail

args = arguments(__doc__)
rows = read_rows(*args.csv)
need = {"claim", "subject", "setting", "seeds", "margins", "margin_mean", "verdict"}
if not rows or not need <= set(rows[0]):
    fail("claims.py", f"{args.csv[0]}: expected the columns of `routelab claims --csv` ({', '.join(sorted(need))})")

claims = list(dict.fromkeys(r["claim"] for r in rows))
settings = list(dict.fromkeys(r["setting"] for r in rows))
fig, axes = plt.subplots(len(claims), 1, figsize=(max(6, 1.2 * len(settings) + 3) + 1.8, 2.4 * len(claims)), squeeze=False)
for ax, claim in zip(axes[:, 0], claims):
    mine = [r for r in rows if r["claim"] == claim]
    subjects = list(dict.fromkeys(r["subject"] for r in mine))
    width = 0.8 / max(1, len(subjects))
    for k, subject in enumerate(subjects):
        colour = f"C{k % 10}"
        for r in mine:
            if r["subject"] != subject:
                continue
            x = settings.index(r["setting"]) - 0.4 + width * (k + 0.5)
            margins = [float(m) for m in r["margins"].split(";") if m]
            ax.plot([x] * len(margins), margins, "o", ms=3.5, color=colour, alpha=0.8,
                    label=subject if r is next(q for q in mine if q["subject"] == subject) else None)
            ax.plot([x - width * 0.4, x + width * 0.4], [float(r["margin_mean"])] * 2, "-", color=colour, lw=1.5)
            if r["verdict"] == "marginal":
                ax.plot([x], [float(r["margin_mean"])], "x", color="k", ms=5)
    ax.axhline(0, color="k", ls="--", lw=0.8)
    ax.set_title(claim, fontsize=9, loc="left")
    ax.set_ylabel("margin (bits)")
    ax.set_xticks(range(len(settings)))
    ax.set_xticklabels(settings, fontsize=8, rotation=15, ha="right", rotation_mode="anchor")
    # Beside the panel, not over it: the points may sit anywhere.
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
fig.suptitle("Each claim's margin by setting (points: seeds; bars: means; x: marginal; > 0: holds)", fontsize=10)
fig.tight_layout()
save(fig, args.out)
print(f"claims.py: {len(claims)} claims x {len(settings)} settings -> {args.out}.png", file=sys.stderr)
