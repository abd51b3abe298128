#!/usr/bin/python3
"""NumPy versions of two simulations, for bench/run_sims.py: what a NumPy user
would write, vectorised where the mathematics allows.

  sims_numpy.py far-mass   [--d 8 --K 1 --lambda_ 3 --ML 10000000 --routes 2]
  sims_numpy.py score-tail [--B 32 --a 1 --n 10 --samples 10000000 --chunk 100000]

far-mass: nested Householder routes (uniform normals) of M_L steps, logits
lambda * e_1^T P_n e_1, all kept in memory, then the far mass by logsumexp
(the walk is sequential in n, so the loop over steps stays in Python,
vectorised over routes). score-tail: S_n = mean_b cos(sum of n U[-a, a]
increments) for every sample, in chunks, and the tail frequencies.
Prints one line of key=value pairs with the seconds inside the process.
"""
import argparse
import time

import numpy as np


def far_mass(a, rng):
    d, R, M = a.d, a.routes, a.ML
    x = np.zeros((R, d))
    x[:, 0] = 1.0
    logits = np.empty((M, R))
    chunk = 65536
    for t0 in range(0, M, chunk):
        m = min(chunk, M - t0)
        v = rng.standard_normal((m, R, d))
        v /= np.linalg.norm(v, axis=2, keepdims=True)
        for t in range(m):
            vt = v[t]
            x -= 2.0 * np.einsum("ij,ij->i", vt, x)[:, None] * vt
            logits[t0 + t] = x[:, 0]
    logits *= a.lambda_
    near = np.log(a.K) + a.lambda_
    top = np.maximum(logits.max(axis=0), near)
    far = np.log(np.exp(logits - top).sum(axis=0)) + top
    rho = 1.0 / (1.0 + np.exp(near - far))
    return rho.mean()


def score_tail(a, rng):
    s_levels = np.array([0.3, 0.5])
    hits = np.zeros(len(s_levels))
    for i0 in range(0, a.samples, a.chunk):
        m = min(a.chunk, a.samples - i0)
        theta = rng.uniform(-a.a, a.a, size=(m, a.n, a.B)).sum(axis=1)
        S = np.cos(theta).mean(axis=1)
        hits += (S[:, None] >= s_levels[None, :]).sum(axis=0)
    return (hits / a.samples).sum()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workload", choices=["far-mass", "score-tail"])
    ap.add_argument("--d", type=int, default=8)
    ap.add_argument("--K", type=int, default=1)
    ap.add_argument("--lambda_", type=float, default=3.0)
    ap.add_argument("--ML", type=int, default=10_000_000)
    ap.add_argument("--routes", type=int, default=2)
    ap.add_argument("--B", type=int, default=32)
    ap.add_argument("--a", type=float, default=1.0)
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--samples", type=int, default=10_000_000)
    ap.add_argument("--chunk", type=int, default=100_000)
    a = ap.parse_args()
    rng = np.random.default_rng(1)
    t = time.perf_counter()
    value = far_mass(a, rng) if a.workload == "far-mass" else score_tail(a, rng)
    print(f"{a.workload} seconds={time.perf_counter() - t:.3f} checksum={value:.6g}")


if __name__ == "__main__":
    main()
