#!/usr/bin/python3
"""A simulation called from Python beside the same simulation from the CLI (issue 37's target: within 5% of the
CLI's time at the same size). Alternately, per round (the side that goes first alternates too): `routelab sim
NAME FLAGS --out FILE` (process start and CSV writing included) and routelab.sim(NAME, **FLAGS) in this process
(the measured columns handed over as computed, the others read once). Prints each round's two times side by
side, then each side's median wall time, the ratio of the medians (Python / CLI) and whether it is within 5%.
The numbers must be the same: every round, every measured column bit for bit against the CLI's CSV.

  PYTHONPATH=build/python /usr/bin/python3 bench/run_python_sim.py [--bin build/routelab] [--rounds 5]
      [--sim spectral-gap] [--flags "--family householder --d 8 --samples 2000000"] [--threads 2]
"""
import argparse
import csv
import math
import os
import shlex
import statistics
import subprocess
import tempfile
import time

import numpy as np

import routelab

MEASURED = ("estimate", "stderr", "ci_low", "ci_high", "theory")


def same_as_csv(cols, path):
    """Every measured column of routelab.sim's result has the bits of the CLI's CSV column, parsed."""
    with open(path) as f:
        rows = list(csv.DictReader(f))
    for name in MEASURED:
        parsed = np.array([math.nan if r[name] == "" else float(r[name]) for r in rows])
        if len(parsed) != len(cols[name]) or not np.array_equal(parsed.view(np.uint64), cols[name].view(np.uint64)):
            return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="build/routelab")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sim", default="spectral-gap")
    ap.add_argument("--flags", default="--family householder --d 8 --samples 2000000")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    words = shlex.split(a.flags)
    if len(words) % 2 or not all(w.startswith("--") for w in words[::2]):
        raise SystemExit("run_python_sim: --flags takes '--name value' pairs")
    kw = {words[i][2:].replace("-", "_"): words[i + 1] for i in range(0, len(words), 2)}
    cli, py = [], []
    print(f"{a.sim} {a.flags} --threads {a.threads}")
    print("round  first   CLI s     Python s  Python / CLI")
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cli.csv")
        for r in range(a.rounds):
            order = ("cli", "py") if r % 2 == 0 else ("py", "cli")
            for side in order:
                t0 = time.perf_counter()
                if side == "cli":
                    subprocess.run([a.bin, "sim", a.sim, *words, "--threads", str(a.threads), "--out", out],
                                   check=True)
                    cli.append(time.perf_counter() - t0)
                else:
                    cols = routelab.sim(a.sim, threads=a.threads, **kw)
                    py.append(time.perf_counter() - t0)
            if not same_as_csv(cols, out):
                raise SystemExit("run_python_sim: routelab.sim's measured columns differ from the CLI's CSV")
            print(f"{r + 1:5d}  {order[0]:6s}  {cli[-1]:8.3f}  {py[-1]:8.3f}  {py[-1] / cli[-1]:.3f}")
    c, p = statistics.median(cli), statistics.median(py)
    print(f"median        {c:8.3f}  {p:8.3f}  {p / c:.3f} ({'within' if p <= 1.05 * c else 'NOT within'} 5%)")


if __name__ == "__main__":
    main()
