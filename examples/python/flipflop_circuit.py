#!/usr/bin/python3
"""How does a two-layer flip-flop model find the latest write, and why does it miss at one distance? Where each
attention head looks at the read, on the distance sets `routelab eval` asks of a committed model (the latest write
exactly D bytes before the read), scored in PyTorch.

  PYTHONPATH=build/python /usr/bin/python3 examples/python/flipflop_circuit.py [MODEL] [--distances 6,8,10,16]

For each D: the reads and errors; the first layer's weight at the read on the write's bit (the best head); and for
each second-layer head, the key it weighs most (as an offset from the write, "w+7", and the share of reads where
it is that key), the first layer's weight there on the write's bit (the best head: does that key hold the bit?), and
the head's weight on the byte just before the read. MODEL defaults to the suite's two-layer RoPE
(rope-layers=2-s1), at chance with its write 8 bytes back and right at 6 and 10 (docs/results.md explains the
reading). Needs numpy, torch and the compiled routelab module (the sets). tests/python/test_flipflop_circuit.py
checks the reading docs/results.md gives on the default model.
"""
import argparse
import contextlib
import os
import sys
from collections import Counter

import numpy as np
import torch

import routelab
import routelab.torch as rt
import routelab.torch.attention as attention

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT = os.path.join(ROOT, "paper-figures", "tasks-cpu", "models", "flipflop", "rope-layers=2-s1.safetensors")


@contextlib.contextmanager
def recorded_attention():
    """Each attention layer's probabilities (B, heads, T, T), in layer order, while the block runs. They are the
    layer's own softmax: `attend` again with the identity for values returns its rows of weights, masks and
    biases included. Schemes that end in `attend` only (not the Householder transports)."""
    probabilities = []
    attend = attention.attend

    def recording(q, k, v, **kw):
        eye = torch.eye(k.shape[2], dtype=q.dtype).expand(*k.shape[:2], -1, -1)
        probabilities.append(attend(q, k, eye, **kw))
        return attend(q, k, v, **kw)
    attention.attend = recording
    try:
        yield probabilities
    finally:
        attention.attend = attend


def circuit(model, s):
    """One distance set's reading: {reads, errors, first_at_read, heads: [{relay, share, relay_holds, before}]}.
    The CLI's passes (rt.task_passes), one at a time: each layer's probabilities are batch x heads x T x T."""
    relays, holds, before = None, None, None
    at_read = 0.0
    errors = 0
    with recorded_attention() as probs:
        for lo, logits in rt.task_passes(model, s):
            predicted = logits.argmax(-1).numpy()
            if len(probs) != 2:
                raise ValueError(f"recorded {len(probs)} attention layers; this reads a two-layer model whose "
                                 "scheme ends in attend (not the Householder transports)")
            first, second = (p.numpy() for p in probs)
            probs.clear()
            heads = second.shape[1]
            if relays is None:
                relays, holds, before = [Counter() for _ in range(heads)], np.zeros(heads), np.zeros(heads)
            seq = s["reads"][:, 0]
            for q, t, _ in s["reads"][(seq >= lo) & (seq < lo + len(predicted))]:
                row, i = s["bytes"][q], q - lo
                w = np.flatnonzero(row[:t] == ord("w"))[-1]  # the latest write; its bit is at w + 1
                errors += predicted[i, t] != row[t + 1]
                at_read += first[i, :, t, w + 1].max()
                for h in range(heads):
                    key = int(second[i, h, t].argmax())
                    relays[h][key - w] += 1
                    holds[h] += first[i, :, key, w + 1].max()
                    before[h] += second[i, h, t, t - 1]
    n = len(s["reads"])
    out = []
    for h in range(len(relays)):
        relay, count = relays[h].most_common(1)[0]
        out.append(dict(relay=relay, share=count / n, relay_holds=holds[h] / n, before=before[h] / n))
    return dict(reads=n, errors=int(errors), first_at_read=at_read / n, heads=out)


def readings(model_file, distances, reads=100):
    """{D: circuit(...)} for the model's distance sets at the training length."""
    torch.set_num_threads(1)
    model = rt.from_safetensors(model_file, dtype=torch.float32)
    sets = routelab.task_sets(model_file, "1x", distances=tuple(distances), distance_reads=reads)
    return {s["distance"]: circuit(model, s) for s in sets if s["set"] == "distance"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", default=DEFAULT)
    ap.add_argument("--distances", default="6,8,10,16")
    ap.add_argument("--reads", type=int, default=100, help="sequences per distance set")
    args = ap.parse_args()
    distances = [int(d) for d in args.distances.split(",")]
    try:
        results = readings(args.model, distances, args.reads)
    except ValueError as e:
        print(f"flipflop_circuit: {args.model}: {e}", file=sys.stderr)
        return 2
    print(f"{os.path.basename(args.model)}: the latest write D bytes before the read")
    print(f"{'D':>4} {'errors':>11} {'L1 on bit':>10}  second layer, each head: key it weighs most (share), "
          "L1 there on bit, weight on the byte before the read")
    for d, r in results.items():
        heads = "   ".join(f"h{h}: w{x['relay']:+d} ({x['share']:.0%}), {x['relay_holds']:.2f}, {x['before']:.3f}"
                           for h, x in enumerate(r["heads"]))
        print(f"{d:>4} {r['errors']:>4} of {r['reads']:<4} {r['first_at_read']:>9.2f}  {heads}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
