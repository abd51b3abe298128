#!/usr/bin/python3
"""routelab.torch's attention in PyTorch, forward and backward, against a plain RoPE attention (issue 53): the
modules (projections included: RotaryAttention, AccumulatedRotaryAttention with learned angles,
HouseholderAttention without and with value transport) and the functions (accumulated_rotary_attention under
RoPE's angles, householder_attention's blocked form, and up to --reference-up-to its position-by-position
reference, the algorithm HouseholderAttention ran before) at each length. Rounds rotate the methods; prints each
method's median seconds per forward+backward and its ratio to rope's median, and the load average.

  /usr/bin/python3 bench/run_torch_attention.py [--lengths 128,512,2048] [--rounds 5] [--threads 2]
      [--batch 4] [--d-model 128] [--heads 4] [--chunk 64] [--clock wall|cpu] [--reference-up-to 512]

Needs only torch (PYTHONPATH=python or build/python for routelab.torch).
"""
import argparse
import os
import statistics
import time

import torch

import routelab.torch as rt


def module_methods(C, H, chunk):
    torch.manual_seed(0)
    mods = {"rope": rt.RotaryAttention(C, H), "learned_qkv": rt.AccumulatedRotaryAttention(C, H, angles="learned"),
            "householder_qk": rt.HouseholderAttention(C, H),
            "householder_qkv": rt.HouseholderAttention(C, H, transport_values=True)}
    return {name: (lambda h, tokens, m=m: m(h, tokens)) for name, m in mods.items()}


def function_methods(hd, chunk, T, reference_up_to):
    def rope(q, k, v, w, beta, T):
        theta = torch.arange(T, dtype=torch.float64)[None, :, None] * rt.rope_frequencies(hd)[None, None, :]
        return rt.accumulated_rotary_attention(q, k, v, theta.expand(q.shape[0], T, hd // 2))

    methods = {"rope (function)": rope,
               "householder_attention": lambda q, k, v, w, beta, T: rt.householder_attention(q, k, v, w, beta,
                                                                                            chunk=chunk),
               "householder_attention qkv": lambda q, k, v, w, beta, T: rt.householder_attention(
                   q, k, v, w, beta, transport_values=True, chunk=chunk)}
    if T <= reference_up_to:  # position by position, as HouseholderAttention ran before the blocked form
        methods["householder reference"] = lambda q, k, v, w, beta, T: rt.householder_attention_reference(
            q, k, v, w, beta)
    return methods


def time_once(fn, inputs, clock):
    for x in inputs:
        x.grad = None
    t0 = clock()
    fn().sum().backward()
    return clock() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lengths", default="128,512,2048")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--chunk", type=int, default=rt.householder.DEFAULT_CHUNK)
    ap.add_argument("--reference-up-to", type=int, default=512,
                    help="time householder_attention_reference (the position loop) at lengths up to this")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall time, or this process's CPU time (all threads: steadier on a loaded machine)")
    a = ap.parse_args()
    clock = time.perf_counter if a.clock == "wall" else time.process_time
    torch.set_num_threads(a.threads)
    B, C, H = a.batch, a.d_model, a.heads
    hd = C // H
    print(f"torch {torch.__version__}, {a.threads} threads, B={B}, d_model={C}, heads={H}, chunk={a.chunk}, "
          f"{a.clock} clock, load average {os.getloadavg()[0]:.2f}")
    print(f"{'T':>5}  {'method':<26} {'median s':>9}  {'/ rope':>6}")
    for T in [int(x) for x in a.lengths.split(",")]:
        g = torch.Generator().manual_seed(T)
        h = torch.randn(B, T, C, generator=g, requires_grad=True)
        tokens = torch.randint(0, 256, (B, T), generator=g)
        q, k, v = (torch.randn(B, T, H, hd, generator=g, requires_grad=True) for _ in range(3))
        w = torch.randn(B, T, H, hd, generator=g)
        w = (w / w.norm(dim=-1, keepdim=True)).requires_grad_(True)
        beta = (2.0 * torch.rand(B, T, H, generator=g)).requires_grad_(True)
        runs = {}
        for name, fn in module_methods(C, H, a.chunk).items():
            runs[name] = (lambda fn=fn: fn(h, tokens), [h])
        for name, fn in function_methods(hd, a.chunk, T, a.reference_up_to).items():
            runs[name] = (lambda fn=fn: fn(q, k, v, w, beta, T), [q, k, v, w, beta])
        times = {name: [] for name in runs}
        for name, (fn, inputs) in runs.items():  # warm-up
            time_once(fn, inputs, clock)
        names = list(runs)
        for r in range(a.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for name in order:
                times[name].append(time_once(*runs[name], clock))
        med = {name: statistics.median(t) for name, t in times.items()}
        for name in names:
            base = med["rope (function)"] if name in function_methods(hd, a.chunk, T, a.reference_up_to) else \
                med["rope"]
            print(f"{T:>5}  {name:<26} {med[name]:>9.4f}  {med[name] / base:>6.2f}")
        print(f"       load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
