"""PyTorch parity (issues 18, 37): for every scheme, a tiny model trained a few steps by routelab, exported, and
scored again by routelab.torch (from_safetensors, the package's modules) in float64 from the .safetensors file
alone. Bits per byte must
agree with `routelab eval` to 1e-5 relative and every position's loss to 1e-4 (|a - b| / max(1, |b|)), at
the training length and 4x it. Prints one line per model with the worst differences.

A check that cannot fail checks nothing: on one model of each kind of scheme (PLANTED) the same comparison
runs again with the torch model perturbed (RoPE's frequencies, the random angles' seed, ALiBi's slopes, the
forget gate's bias, PaTH's convolution taps, the final layer norm's bias) and must fail. Exit status 1 if an honest model fails or a perturbed one passes.

  PYTHONPATH=BUILD/python /usr/bin/python3 tests/python/test_torch_parity.py --routelab BUILD/routelab
      [--keep DIR] [--only a,b]
"""
import argparse
import copy
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import torch

import routelab.torch as rt
from helpers import make_corpus, run_cli, tiny_config


# The validation stream cut to its first 9000 bytes, so the check takes seconds: at L = 16 (batch 512) and
# L = 64 (batch 128) it is two forward passes, the second one short, so pass ids and a partial batch are met.
VAL_BYTES = 9000
# (name, scheme, extra [model] lines): every scheme, the learned ones also with one shared table, the
# Householder ones in both beta modes.
HOUSEHOLDER = [s for s in rt.SCHEMES if rt.SCHEMES[s].steps != "none"]
VARIANTS = [(s, s, "") for s in rt.SCHEMES if s not in HOUSEHOLDER]
VARIANTS += [("learned_qkv-shared", "learned_qkv", "learned_shared = true\n")]
VARIANTS += [(f"{s}-{b}", s, f'householder_beta = "{b}"\n') for s in HOUSEHOLDER for b in ("path", "reflection")]
# The variants whose perturbed copy must fail: one per kind of positional transport.
PLANTED = {"nope", "rope", "random_qkv", "alibi", "fox", "householder_qkv-path", "path_qkv-path", "path_qk_forget-path"}
TOL_BPB, TOL_LOSS = rt.TOL_BPB, rt.TOL_LOSS


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--routelab", required=True)
    ap.add_argument("--keep", help="work in this folder and keep it")
    ap.add_argument("--only", help="comma-separated variant names")
    a = ap.parse_args()
    # One thread each, torch and routelab (whose results do not depend on it): on a busy machine a second
    # thread mostly spins.
    torch.set_num_threads(1)
    rt.philox.self_test()
    work = a.keep or tempfile.mkdtemp(prefix="routelab_torch_parity_")
    os.makedirs(work, exist_ok=True)
    try:
        return check(a, work)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


def check(a, work):
    corpus = make_corpus(work, VAL_BYTES)
    val = np.fromfile(os.path.join(corpus, "val.txt"), dtype=np.uint8)
    failed, passed_planted, planted = [], [], 0
    t0 = time.time()
    variants = [v for v in VARIANTS if not a.only or v[0] in a.only.split(",")]
    for name, scheme, extra in variants:
        run = os.path.join(work, name)
        cfg = os.path.join(work, name + ".toml")
        with open(cfg, "w") as f:
            f.write(tiny_config(scheme, extra, corpus))
        if not os.path.exists(os.path.join(run, "checkpoint.bin")):
            run_cli(a.routelab, "train", "--config", cfg, "--out", run, "--quiet", "--threads", "1")
        eval_csv, losses_csv = os.path.join(run, "eval.csv"), os.path.join(run, "losses.csv")
        run_cli(a.routelab, "eval", "--run", run, "--lengths", "1x,4x", "--out", eval_csv, "--losses", losses_csv,
                 "--quiet", "--threads", "1")
        st = os.path.join(work, name + ".safetensors")
        if os.path.exists(st):
            os.remove(st)
        run_cli(a.routelab, "export", "--run", run, "--out", st)
        model = rt.from_safetensors(st, torch.float64)
        theirs = rt.read_losses(losses_csv)
        their_bpb = rt.read_eval_bpb(eval_csv)

        def agrees(m, label):
            worst_bpb = worst_loss = 0.0
            bpbs = []
            for L in sorted(their_bpb):
                _, _, bpb, rel, worst = rt.compare(m, val, L, their_bpb[L], theirs.get(L, []))
                bpbs.append(f"{bpb:.4f}")
                worst_bpb, worst_loss = max(worst_bpb, rel), max(worst_loss, worst)
            ok = worst_bpb <= TOL_BPB and worst_loss <= TOL_LOSS
            lengths = ",".join(str(L) for L in sorted(their_bpb))
            print(f"{label:26s} L={lengths}: bits/byte {','.join(bpbs)}, worst relative difference "
                  f"{worst_bpb:.2e}, worst per-position {worst_loss:.2e}  {'ok' if ok else 'FAILS'}", flush=True)
            return ok

        if not agrees(model, name):
            failed.append(name)
        if name in PLANTED:
            planted += 1
            perturbed = copy.deepcopy(model)
            undo = plant(perturbed)
            if agrees(perturbed, name + " (planted)"):
                passed_planted.append(name)
            undo()
    print(f"torch_parity: {len(variants) - len(failed)} of {len(variants)} models agree "
          f"(bits/byte to {TOL_BPB:g} relative, per-position losses to {TOL_LOSS:g}), and "
          f"{planted - len(passed_planted)} of {planted} perturbed ones fail, in {time.time() - t0:.1f} s")
    if failed:
        print("torch_parity: FAILS for " + ", ".join(failed))
    if passed_planted:
        print("torch_parity: perturbed models that still passed: " + ", ".join(passed_planted))
    return 1 if failed or passed_planted else 0


def plant(model):
    """A small error in the modules, one per kind of scheme, that the check must catch; returns what undoes an
    error planted outside the model (ALiBi's slopes are computed, not stored)."""
    attn = [blk.attn for blk in model.layers]
    undo = lambda: None  # noqa: E731
    with torch.no_grad():
        if attn[0].forget is not None and attn[0].angles is None:
            for a in attn:
                a.forget.bias -= 0.1  # every gate a little more closed
        elif attn[0].step_kind == "path":
            for a in attn:
                a.steps.conv.copy_(a.steps.conv.flip(1))  # the convolution's taps in the other order
        elif attn[0].alibi:
            slopes = rt.attention.alibi_slopes
            rt.attention.alibi_slopes = lambda heads, device=None: slopes(heads, device) * 1.01

            def undo():
                rt.attention.alibi_slopes = slopes
        elif attn[0].angle_kind == "random":
            for a in attn:
                a.angles.seed += 1  # other angles
        elif attn[0].angle_kind == "rope":
            for a in attn:
                a.angles.rope_base *= 1.001
        else:
            model.ln_f.bias += 1e-3
    return undo


if __name__ == "__main__":
    sys.exit(main())
