#!/usr/bin/python3
"""routelab's byte-level transformer in PyTorch, scoring a `routelab export` file as `routelab eval` does: the
command line over the routelab.torch package (python/routelab/torch/, where the model and the Philox streams
now live), which needs only torch and numpy.

  /usr/bin/python3 bench/peers/model_torch.py MODEL.safetensors --val CORPUS/val.txt --lengths 16,64
      [--losses LOSSES.csv] [--eval-csv EVAL.csv] [--dtype float64|float32] [--threads N]
  /usr/bin/python3 bench/peers/model_torch.py --self-test

Prints one CSV row per length: eval_len,windows,tokens,bits_per_byte. With --losses (the CSV `routelab eval
--losses` writes) and --eval-csv (its eval.csv) it compares: per length the relative difference of bits per
byte and the largest per-position difference |a - b| / max(1, |b|); a line per length, and exit status 1 when
either passes its tolerance (--tol-bpb 1e-5, --tol-loss 1e-4). The model and the comparison are
routelab.torch's (model.py); docs/export.md describes the file.
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "python"))
from routelab.torch import (TOL_BPB, TOL_LOSS, compare, from_safetensors, philox, read_eval_bpb,  # noqa: E402
                            read_losses)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", nargs="?", help="a routelab export file (.safetensors)")
    ap.add_argument("--val", help="the validation stream (CORPUS/val.txt; default: the run's corpus)")
    ap.add_argument("--lengths", default="", help="comma-separated window lengths (default: the training length)")
    ap.add_argument("--losses", help="routelab eval --losses CSV to compare with")
    ap.add_argument("--eval-csv", help="routelab eval's CSV (bits per byte) to compare with")
    ap.add_argument("--tol-bpb", type=float, default=TOL_BPB)
    ap.add_argument("--tol-loss", type=float, default=TOL_LOSS)
    ap.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--self-test", action="store_true", help="Philox4x32-10 against Random123's known answers")
    a = ap.parse_args()
    philox.self_test()  # always: the random schemes rest on it
    if a.self_test:
        print("philox4x32-10: the 3 known-answer vectors of Random123 match")
        if not a.model:
            return 0
    if not a.model:
        ap.error("name a .safetensors file (or --self-test)")
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    model = from_safetensors(a.model, getattr(torch, a.dtype))
    meta = model.meta
    val = a.val or os.path.join(json.loads(meta["config"])["data"]["corpus"], "val.txt")
    stream = np.fromfile(val, dtype=np.uint8)
    lengths = [int(x) for x in a.lengths.split(",")] if a.lengths else [model.m["context"]]
    theirs = read_losses(a.losses) if a.losses else {}
    their_bpb = read_eval_bpb(a.eval_csv) if a.eval_csv else {}
    ok = True
    print("eval_len,windows,tokens,bits_per_byte")
    for L in lengths:
        ours, windows, bpb, rel, d = compare(model, stream, L, their_bpb.get(L), theirs.get(L) if a.losses else None)
        print(f"{L},{windows},{len(ours)},{bpb!r}", flush=True)
        if rel is not None:
            good = rel <= a.tol_bpb
            ok &= good
            print(f"# {meta['scheme']} L={L}: bits/byte torch {bpb:.9f} routelab {their_bpb[L]:.9f}, relative "
                  f"difference {rel:.2e} ({'ok' if good else 'FAILS'} at {a.tol_bpb:g})", file=sys.stderr)
        if a.losses:
            if L not in theirs or d == math.inf:
                print(f"# {meta['scheme']} L={L}: {a.losses} has no losses at this length, or not {len(ours)}",
                      file=sys.stderr)
                ok = False
                continue
            good = d <= a.tol_loss
            ok &= good
            print(f"# {meta['scheme']} L={L}: per-position losses, largest |a - b| / max(1, |b|) {d:.2e} "
                  f"({'ok' if good else 'FAILS'} at {a.tol_loss:g}) over {len(ours)} positions", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
