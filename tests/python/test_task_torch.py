"""Task runs from Python (issue 51): a tiny flip-flop model trained by routelab, exported, and scored again by
routelab.torch (from_safetensors, float64) on the very sets `routelab eval` asks of it (Run.task_sets): at every
read the most likely next byte, against the answer. The errors must be the CLI's, set by set, and the answers
must be the bytes the sets say. A check that cannot fail checks nothing: the same scoring with the answer read
one byte early (the read byte itself) must disagree with the CLI.

  PYTHONPATH=BUILD/python /usr/bin/python3 tests/python/test_task_torch.py --routelab BUILD/routelab
"""
import csv
import os
import shutil
import tempfile
import unittest

import numpy as np
import torch

import routelab
import routelab.torch as rt
from helpers import run_cli, unittest_main_with_binary

ROUTELAB = None
CONFIG = {"model": {"d_model": 16, "heads": 2, "layers": 1, "context": 32, "scheme": "learned_qkv"},
          "train": {"batch": 8, "steps": 150, "lr": 3e-3, "warmup": 5, "checkpoint_every": 150, "log_every": 50},
          "data": {"task": "flipflop"}}
SETS = dict(lengths="1x,2x", p=(0.98,), distances=(2, 8, 30), reads=300, distance_reads=100)


def score(model, s, shift=1):
    """Errors of `model` on a set (dict of Run.task_sets): the most likely byte at each read's position
    against byte position + shift."""
    tokens = torch.from_numpy(s["bytes"][:, :-1].astype(np.int64))
    with torch.no_grad():
        predicted = model(tokens).argmax(-1).numpy()
    seq, at = s["reads"][:, 0], s["reads"][:, 1]
    return int((predicted[seq, at] != s["bytes"][seq, at + shift]).sum())


class TaskTorch(unittest.TestCase):
    def test_pytorch_gives_the_cli_errors_on_the_cli_sets(self):
        torch.set_num_threads(1)
        work = tempfile.mkdtemp(prefix="routelab_task_torch_")
        try:
            run = routelab.train(CONFIG, os.path.join(work, "run"), threads=1)
            self.assertEqual(run.task, "flipflop")
            out = os.path.join(work, "eval.csv")
            # The CLI's numbers, from the command line.
            run_cli(ROUTELAB, "eval", "--run", run.path, "--lengths", SETS["lengths"], "--p", "0.98", "--distances",
                    "2,8,30", "--reads", "300", "--distance-reads", "100", "--out", out, "--quiet")
            with open(out) as f:
                cli = list(csv.DictReader(f))
            # Python's own call writes the same CSV.
            py = run.task_eval(**SETS, out=os.path.join(work, "py.csv"))
            with open(os.path.join(work, "py.csv")) as a, open(out) as b:
                self.assertEqual(a.read(), b.read())
            self.assertEqual(list(py["errors"]), [int(r["errors"]) for r in cli])
            model = rt.from_safetensors(run.export(os.path.join(work, "m.safetensors")), dtype=torch.float64)
            sets = run.task_sets(**SETS)
            self.assertEqual(len(sets), len(cli))
            wrong_answers_disagree = False
            for s, row in zip(sets, cli):
                self.assertEqual(s["sequences"], int(row["sequences"]))
                self.assertEqual(len(s["reads"]), int(row["reads"]), s["name"])
                # Every answer is a bit.
                seq, at = s["reads"][:, 0], s["reads"][:, 1]
                self.assertTrue(set(np.unique(s["bytes"][seq, at + 1])) <= {ord("0"), ord("1")}, s["name"])
                self.assertEqual(score(model, s), int(row["errors"]), s["name"])
                wrong_answers_disagree |= score(model, s, shift=0) != int(row["errors"])
            # The planted scorer (the read byte as its own answer) must not agree everywhere.
            self.assertTrue(wrong_answers_disagree)
            # A corpus-only keyword is refused in Python's words.
            with self.assertRaisesRegex(ValueError, "distances="):
                run.task_eval(distances=(3,), out=os.path.join(work, "bad.csv"))
        finally:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    unittest_main_with_binary("test_task_torch.py")
