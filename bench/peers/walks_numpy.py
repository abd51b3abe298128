#!/usr/bin/python3
"""The NumPy/SciPy peer of bench_walks: each workload written as a NumPy user
would write it, vectorised over walks, with NumPy's default generator (PCG64,
ziggurat normals) and the BLAS that numpy is linked to.

  walks_numpy.py W3 [--d 64 --walks 4096 --steps 256]
  walks_numpy.py W4 [--blocks 32 --walks 10000 --steps 4096]
  walks_numpy.py W5 [--d 64 --samples 2000]
  walks_numpy.py W6 [--d 128 --walks 64 --steps 1024 --block 32]
  walks_numpy.py gemm [--n 2048]
  walks_numpy.py info

Prints one line of key=value pairs: the workload's seconds (timed inside the
process, after imports and a small warm-up) and a checksum; `info` prints the
BLAS threadpoolctl sees. Run it with the BLAS thread count set in the
environment (bench/run_walks.py sets OPENBLAS_NUM_THREADS=1).
"""
import argparse
import json
import time

import numpy as np


def w3(a, rng):
    # x_t = (I - 2 v v^T) x_{t-1}, v uniform on the sphere; score q.x_t.
    d, W, n = a.d, a.walks, a.steps
    q = np.full(d, 1.0 / np.sqrt(d))
    x = np.zeros((W, d))
    x[:, 0] = 1.0
    scores = np.empty((n, W))
    for t in range(n):
        v = rng.standard_normal((W, d))
        v /= np.sqrt(np.einsum("ij,ij->i", v, v))[:, None]
        c = 2.0 * np.einsum("ij,ij->i", v, x)
        x -= c[:, None] * v
        np.dot(x, q, out=scores[t])
    return scores[-1].sum()


def w4(a, rng):
    # Theta_{t,b} = Theta_{t-1,b} + omega + U[-a, a], wrapped mod 2 pi;
    # S_t = mean_b cos Theta_{t,b}; keep the mean curve and its spread.
    B, W, n, half, omega = a.blocks, a.walks, a.steps, 0.5, 0.3
    theta = np.zeros((W, B))
    u = np.empty((W, B))
    c = np.empty((W, B))
    mean = np.zeros(n)
    sq = np.zeros(n)
    two_pi = 2.0 * np.pi
    for t in range(n):
        rng.random(out=u)
        u *= 2.0 * half
        u += omega - half
        theta += u
        np.remainder(theta, two_pi, out=theta)
        np.cos(theta, out=c)
        S = c.mean(axis=1)
        mean[t] = S.sum()
        sq[t] = S @ S
    return mean[-1] + sq[-1]


def w5(a, rng):
    from scipy.stats import ortho_group
    Q = ortho_group.rvs(dim=a.d, size=a.samples, random_state=rng)
    return Q[:, 0, 0].sum()


def w6(a, rng):
    # P <- H_b ... H_1 P per block of b reflections, as P - V T^T V^T P with
    # the compact-WY factor T (Schreiber-Van Loan), batched over walks.
    d, W, n, b = a.d, a.walks, a.steps, a.block
    P = np.broadcast_to(np.eye(d), (W, d, d)).copy()
    for t0 in range(0, n, b):
        m = min(b, n - t0)
        V = rng.standard_normal((W, d, m))
        V /= np.sqrt(np.einsum("wij,wij->wj", V, V))[:, None, :]
        Vt = V.transpose(0, 2, 1)
        G = Vt @ V
        T = np.zeros((W, m, m))
        for i in range(m):
            T[:, i, i] = 2.0
            if i:
                T[:, :i, i] = -2.0 * np.einsum("wjk,wk->wj", T[:, :i, :i], G[:, :i, i])
        Y = Vt @ P
        Y = T.transpose(0, 2, 1) @ Y
        P -= V @ Y
    return np.trace(P, axis1=1, axis2=2).sum()


def gemm(a, rng):
    A = rng.random((a.n, a.n))
    B = rng.random((a.n, a.n))
    best = 1e300
    for _ in range(3):
        t0 = time.perf_counter()
        A @ B
        best = min(best, time.perf_counter() - t0)
    return 2.0 * a.n ** 3 / best * 1e-9


def info():
    from threadpoolctl import threadpool_info
    import scipy
    return {"numpy": np.__version__, "scipy": scipy.__version__, "threadpools": threadpool_info()}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("workload", choices=["W3", "W4", "W5", "W6", "gemm", "info"])
    p.add_argument("--d", type=int)
    p.add_argument("--walks", type=int)
    p.add_argument("--steps", type=int)
    p.add_argument("--blocks", type=int, default=32)
    p.add_argument("--samples", type=int, default=2000)
    p.add_argument("--block", type=int, default=32)
    p.add_argument("--n", type=int, default=2048)
    p.add_argument("--seed", type=int, default=20240611)
    a = p.parse_args()
    if a.workload == "info":
        print(json.dumps(info()))
        return
    defaults = {"W3": (64, 4096, 256), "W4": (None, 10000, 4096), "W5": (64, None, None), "W6": (128, 64, 1024)}
    if a.workload in defaults:
        dd, ww, nn = defaults[a.workload]
        a.d = a.d or dd
        a.walks = a.walks or ww
        a.steps = a.steps or nn
    rng = np.random.default_rng(a.seed)
    if a.workload == "gemm":
        print(f"gemm gflops={gemm(a, rng):.2f}")
        return
    fn = {"W3": w3, "W4": w4, "W5": w5, "W6": w6}[a.workload]
    # Warm-up on a tiny copy of the problem: first calls into BLAS, scipy's
    # imports and the allocator settle outside the timed run.
    small = argparse.Namespace(**vars(a))
    for k in ("walks", "steps", "samples"):
        if getattr(small, k):
            setattr(small, k, max(1, min(getattr(small, k), 4)))
    if a.workload == "W6":
        small.steps = small.block
    fn(small, np.random.default_rng(1))
    t0 = time.perf_counter()
    chk = fn(a, rng)
    t = time.perf_counter() - t0
    print(f"{a.workload} peer_s={t:.5f} checksum={chk:.12g}")


if __name__ == "__main__":
    main()
