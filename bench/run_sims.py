#!/usr/bin/python3
"""Wall time and peak memory of two simulations at the issue's sizes, beside
their NumPy versions (bench/peers/sims_numpy.py), alternating:

  far-mass at M_L = 1e7 (two nested Householder routes, d = 8, streamed: our
  memory must not grow with M_L) and score-tail at 1e7 samples (SO(2) blocks,
  B = 32, n = 10).

  /usr/bin/python3 bench/run_sims.py [--bin build/routelab] [--rounds 2] [--only score-tail]

Both sides run one thread. Peak memory is the maximum resident set size of the
process (GNU time's %M), which includes the interpreter for the peer.
"""
import argparse
import os
import statistics
import subprocess
import tempfile

OURS = {
    "far-mass": ["sim", "far-mass", "--family", "householder", "--d", "8", "--K", "1", "--lambda", "3",
                 "--gap", "0.5", "--ML", "10000000", "--routes", "2", "--samples", "1000", "--threads", "1"],
    "score-tail": ["sim", "score-tail", "--family", "so2", "--d", "64", "--a", "1", "--n", "10",
                   "--s", "0.3,0.5", "--M", "4", "--samples", "10000000", "--threads", "1"],
}
PEER = {
    "far-mass": ["far-mass", "--d", "8", "--K", "1", "--lambda_", "3", "--ML", "10000000", "--routes", "2"],
    "score-tail": ["score-tail", "--B", "32", "--a", "1", "--n", "10", "--samples", "10000000"],
}


def timed(cmd, env):
    with tempfile.NamedTemporaryFile(mode="r") as f:
        subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", f.name] + cmd, env=env, check=True,
                       stdout=subprocess.DEVNULL)
        seconds, kib = f.read().split()[-2:]
    return float(seconds), int(kib) / 1024.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/routelab")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--only", choices=list(OURS), help="time one workload")
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    peer_env = {k: v for k, v in env.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    print(f"{'workload':<11} {'ours s':>8} {'ours MiB':>9} {'numpy s':>8} {'numpy MiB':>10} {'numpy/ours':>10}")
    for wl in [a.only] if a.only else OURS:
        ours, peer = [], []
        for r in range(a.rounds):
            runs = [("ours", [a.bin] + OURS[wl], env), ("peer", ["/usr/bin/python3", os.path.join(here, "peers", "sims_numpy.py")] + PEER[wl], peer_env)]
            if r % 2:
                runs.reverse()
            for who, cmd, e in runs:
                (ours if who == "ours" else peer).append(timed(cmd, e))
        os_, om = statistics.median(t for t, _ in ours), max(m for _, m in ours)
        ps, pm = statistics.median(t for t, _ in peer), max(m for _, m in peer)
        print(f"{wl:<11} {os_:>8.2f} {om:>9.1f} {ps:>8.2f} {pm:>10.1f} {ps / os_:>10.1f}", flush=True)


if __name__ == "__main__":
    main()
