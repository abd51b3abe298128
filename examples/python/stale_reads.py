#!/usr/bin/python3
"""Which write does a flip-flop model read? A committed model (paper-figures/tasks-cpu/models/flipflop/) scored
in PyTorch on the distance sets `routelab eval` asks of it (the latest write exactly D bytes before the read),
its wrong answers split by whether they repeat the bit of the write before the latest one. A model that reads
that stale look-alike instead of the latest write errs on the reads where the two bits differ, and its wrong
answers are the stale bit.

  PYTHONPATH=build/python /usr/bin/python3 examples/python/stale_reads.py [MODEL] [--distances 6,8,10]

MODEL defaults to the suite's two-layer RoPE (rope-layers=2-s1), which is right with its write 6 or 10 bytes
back and at chance at 8 (docs/results.md). Needs numpy, torch and the compiled routelab module (the sets).
Run by the test command: exits 1 if its errors differ from the committed flipflop.csv's at a distance both hold.
"""
import argparse
import csv
import os
import sys

import numpy as np
import torch

import routelab
import routelab.torch as rt

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(ROOT, "paper-figures", "tasks-cpu", "models", "flipflop")
SUITE_CSV = os.path.join(ROOT, "paper-figures", "tasks-cpu", "flipflop.csv")


def committed_sets(model_file):
    """{distance: (sequences, errors)} of the suite's CSV for the run the model file is named after
    (SCHEME[-layers=N]-sS); a distance set scores one read per sequence."""
    name = os.path.basename(model_file)[: -len(".safetensors")]
    scheme, *swept, seed = name.split("-")
    layers = next((s.split("=")[1] for s in swept if s.startswith("layers=")), "1")
    with open(SUITE_CSV) as f:
        return {int(r["distance"]): (int(r["sequences"]), int(r["errors"])) for r in csv.DictReader(f)
                if r["scheme"] == scheme and r["layers"] == layers and r["seed"] == seed[1:]
                and r["set"] == "distance"}


def stale_split(model, s):
    """(errors, errors that are the previous write's bit, reads whose previous write's bit differs)."""
    guesses = rt.task_read_logits(model, s).argmax(-1).numpy()  # the CLI's passes, so its errors are the committed CSV's
    errors = stale = differ = 0
    for (q, t, _), guess in zip(s["reads"], guesses):
        row = s["bytes"][q]
        writes = np.flatnonzero(row[:t] == ord("w"))
        answer = row[t + 1]
        previous = row[writes[-2] + 1] if len(writes) > 1 else None
        errors += guess != answer
        stale += guess != answer and guess == previous
        differ += previous is not None and previous != answer
    return int(errors), int(stale), int(differ)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", default=os.path.join(MODELS, "rope-layers=2-s1.safetensors"))
    ap.add_argument("--distances", default="6,8,10")
    args = ap.parse_args()
    torch.set_num_threads(1)
    distances = tuple(int(d) for d in args.distances.split(","))
    model = rt.from_safetensors(args.model, dtype=torch.float32)
    committed = committed_sets(args.model)
    # The suite's sequences per distance set, so the sets are the ones its CSV scored (routelab's default otherwise).
    reads = {n for n, _ in committed.values()}
    if len(reads) > 1:
        print(f"stale_reads: the committed distance sets hold {sorted(reads)} sequences; expected one count",
              file=sys.stderr)
        return 2
    sets = dict(distance_reads=reads.pop()) if reads else {}
    print(f"{os.path.basename(args.model)}: reads of the latest write D bytes back")
    print(f"{'D':>5} {'reads':>6} {'errors':>7} {'= previous write':>17} {'previous differs':>17}")
    status = 0
    for s in routelab.task_sets(args.model, "1x", distances=distances, **sets):
        if s["set"] != "distance":
            continue
        errors, stale, differ = stale_split(model, s)
        print(f"{s['distance']:>5} {len(s['reads']):>6} {errors:>7} {stale:>17} {differ:>17}")
        if s["distance"] in committed and committed[s["distance"]][1] != errors:
            print(f"stale_reads: {errors} errors at D = {s['distance']}, the committed CSV says "
                  f"{committed[s['distance']][1]}", file=sys.stderr)
            status = 1
    if not committed:
        print("stale_reads: the model is not one of the suite's; its errors are not checked", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
