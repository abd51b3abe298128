"""A task set's reads scored from PyTorch as `routelab eval` scores them (lib/runs/task_eval.cpp): the model's most
likely next byte at each read against the answer (the byte after it), and -log2 p(answer). A set is one dict of
routelab.task_sets; its sequences go through the model in the CLI's forward passes (s["batch"] sequences each,
pass i with pass id s["first_pass"] + i), so random-angle schemes draw the CLI's angles and every scheme gets the
CLI's errors and read bits.

  for s in routelab.task_sets("model.safetensors", "1x,2x"):
      print(s["name"], task_errors(model, s), "of", len(s["reads"]))
"""
import math

import numpy as np
import torch
import torch.nn.functional as F


def task_passes(model, s):
    """Yields (first sequence, logits (B, window, vocab)) for each of the CLI's forward passes over set s. A caller
    that records inside the forward (a hook, a patched attend) sees one pass at a time."""
    tokens = torch.from_numpy(s["bytes"][:, :-1].astype(np.int64))
    device = next(model.parameters()).device
    for i, lo in enumerate(range(0, len(tokens), s["batch"])):
        with torch.no_grad():
            yield lo, model(tokens[lo:lo + s["batch"]].to(device), None, s["first_pass"] + i).cpu()


def task_read_logits(model, s):
    """The model's logits at each of set s's reads, (reads, vocab), in s["reads"] order (sequence order, as
    routelab.task_sets lists them, so each pass's reads follow the previous pass's)."""
    seq, at = torch.from_numpy(s["reads"][:, 0]), torch.from_numpy(s["reads"][:, 1])
    parts = []
    for lo, logits in task_passes(model, s):
        mine = (seq >= lo) & (seq < lo + len(logits))
        parts.append(logits[seq[mine] - lo, at[mine]])
    return torch.cat(parts)


def _answers(s):
    return torch.from_numpy(s["bytes"][s["reads"][:, 0], s["reads"][:, 1] + 1].astype(np.int64))


def task_errors(model, s):
    """Reads of set s the model gets wrong (the CLI's `errors`): its most likely byte against the answer."""
    return int((task_read_logits(model, s).argmax(-1) != _answers(s)).sum())


def task_read_bits(model, s):
    """Mean -log2 p(answer) over set s's reads (the CLI's `read_bits`)."""
    return float(F.cross_entropy(task_read_logits(model, s).double(), _answers(s)) / math.log(2.0))
