#!/usr/bin/python3
"""A spectral gap and its closed form, then a sweep into a pandas DataFrame (and a plot with --plot FILE).

  PYTHONPATH=build/python /usr/bin/python3 examples/python/sweep_frame.py [--plot gap.png]

Run by the test command (ctest -R python_example_sweep_frame); exits 1 if an estimate fails its check.
"""
import argparse
import sys

import numpy as np

import routelab


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--plot", help="write the figure to this file (needs matplotlib)")
    a = ap.parse_args()

    # One law: Example 2's Householder reflection in d = 8 has beta = ||E M|| = 1 - 2/d.
    law = routelab.step_law("householder", d=8)
    P = law.products([1], samples=20000, seed=1)[:, 0]
    print(f"householder d=8: closed form beta {law.gap:.6f}; ||mean of 20000 steps||_op "
          f"{np.linalg.norm(P.mean(axis=0), 2):.6f}")

    # A sweep, as `routelab sim spectral-gap --family householder,givens --d 2,4,8,16` would run it.
    df = routelab.sim_frame("spectral-gap", family=["householder", "givens"], d=[2, 4, 8, 16], samples=20000)
    gaps = df[df.quantity == "beta"][["family", "d", "estimate", "ci_low", "ci_high", "theory", "verdict"]]
    print(gaps.to_string(index=False))
    if a.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(4, 3))
        for fam, g in gaps.groupby("family"):
            ax.errorbar(g.d, g.estimate, yerr=g.estimate - g.ci_low, fmt="o", label=f"{fam} (estimate)")
            ax.plot(g.d, g.theory, "--", label=f"{fam} (closed form)")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("d")
        ax.set_ylabel("beta")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(a.plot)
        print(f"wrote {a.plot}")
    failed = (df.verdict == "fail").sum()
    print(f"{len(df)} rows, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
