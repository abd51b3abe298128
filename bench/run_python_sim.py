#!/usr/bin/python3
"""A simulation called from Python beside the same simulation from the CLI (issue 37's target: within 5% of the
CLI's time at the same size). Alternately, per round: `routelab sim NAME FLAGS --out FILE` (process start and
CSV writing included) and routelab.sim(NAME, **FLAGS) in this process (the columns built as NumPy arrays);
prints each side's median wall time, the ratio (Python / CLI) and whether it is within 5%. The numbers must be
the same (checked every round against the CLI's CSV).

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

import routelab


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="build/routelab")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sim", default="spectral-gap")
    ap.add_argument("--flags", default="--family householder --d 8 --samples 2000000")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    words = shlex.split(a.flags)
    kw = {words[i][2:].replace("-", "_"): words[i + 1] for i in range(0, len(words), 2)}
    cli, py = [], []
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cli.csv")
        for r in range(a.rounds):
            for side in (("cli", "py") if r % 2 == 0 else ("py", "cli")):
                t0 = time.perf_counter()
                if side == "cli":
                    subprocess.run([a.bin, "sim", a.sim, *words, "--threads", str(a.threads), "--out", out],
                                   check=True)
                    cli.append(time.perf_counter() - t0)
                else:
                    cols = routelab.sim(a.sim, threads=a.threads, **kw)
                    py.append(time.perf_counter() - t0)
            with open(out) as f:
                rows = list(csv.DictReader(f))
            same = all((float(r["estimate"]) == e) or (math.isnan(e) and r["estimate"] == "")
                       for r, e in zip(rows, cols["estimate"]))
            if not same or len(rows) != len(cols["estimate"]):
                raise SystemExit("run_python_sim: routelab.sim's estimates differ from the CLI's")
    c, p = statistics.median(cli), statistics.median(py)
    print(f"{a.sim} {a.flags} --threads {a.threads}, {a.rounds} rounds: CLI median {c:.3f} s, Python median "
          f"{p:.3f} s, ratio {p / c:.3f} ({'within' if p <= 1.05 * c else 'NOT within'} 5%)")


if __name__ == "__main__":
    main()
