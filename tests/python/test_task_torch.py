"""Task runs from Python (issue 51): tiny flip-flop models trained by routelab, exported, and scored again by
routelab.torch (from_safetensors, float64; rt.task_errors, rt.task_read_bits) on the very sets `routelab eval` asks
of them (Run.task_sets), in the CLI's forward passes: at every read the most likely next byte against the answer,
and -log2 p(answer). The errors must be the CLI's, set by set, the read bits within float32's reach of them, and the
answers the bytes the sets say; with random angles, the read bits too. A check that cannot fail checks nothing: the
same scoring with the answer read one byte early (the read byte itself) must disagree with the CLI, and so must the
read bits of passes one off the CLI's (other random angles).

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


TOL_READ_BITS = 1e-6  # float32 CLI against float64 PyTorch, a mean over 100-300 reads (seen: 5e-8)


def read_byte_errors(model, s):
    """Planted: errors when the answer is the read byte itself (one byte early)."""
    seq, at = s["reads"][:, 0], s["reads"][:, 1]
    return int((rt.task_read_logits(model, s).argmax(-1).numpy() != s["bytes"][seq, at]).sum())


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
                self.assertEqual(rt.task_errors(model, s), int(row["errors"]), s["name"])
                self.assertAlmostEqual(rt.task_read_bits(model, s), float(row["read_bits"]), delta=TOL_READ_BITS)
                wrong_answers_disagree |= read_byte_errors(model, s) != int(row["errors"])
            # The planted scorer (the read byte as its own answer) must not agree everywhere.
            self.assertTrue(wrong_answers_disagree)
            # A corpus-only keyword is refused in Python's words.
            with self.assertRaisesRegex(ValueError, "distances="):
                run.task_eval(distances=(3,), out=os.path.join(work, "bad.csv"))
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def test_random_angles_are_the_cli_passes(self):
        # A random-angle model's logits depend on the pass ids: PyTorch's read bits are the CLI's only when every
        # pass draws the CLI's angles (rt.task_passes), and one pass off (planted) must miss them.
        torch.set_num_threads(1)
        work = tempfile.mkdtemp(prefix="routelab_task_torch_random_")
        try:
            config = dict(CONFIG, model=dict(CONFIG["model"], scheme="random_qkv"))
            run = routelab.train(config, os.path.join(work, "run"), threads=1)
            cli = run.task_eval(**SETS, out=os.path.join(work, "eval.csv"))
            model = rt.from_safetensors(run.export(os.path.join(work, "m.safetensors")), dtype=torch.float64)
            sets = run.task_sets(**SETS)
            off = []
            for s, errors, bits in zip(sets, cli["errors"], cli["read_bits"]):
                self.assertEqual(rt.task_errors(model, s), int(errors), s["name"])
                self.assertAlmostEqual(rt.task_read_bits(model, s), float(bits), delta=TOL_READ_BITS, msg=s["name"])
                off.append(abs(rt.task_read_bits(model, dict(s, first_pass=s["first_pass"] + 1)) - float(bits)))
            self.assertGreater(max(off), TOL_READ_BITS, "one pass off gives the CLI's read bits")
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def test_a_committed_model_gives_its_committed_error_from_its_file_alone(self):
        # The suite's exported RoPE model (paper-figures/tasks-cpu/models/), its sets from the file's own
        # configuration (routelab.task_sets), scored in PyTorch: the committed CSV's errors at the training law.
        torch.set_num_threads(1)
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
        model_file = os.path.join(root, "paper-figures", "tasks-cpu", "models", "flipflop", "rope-s1.safetensors")
        with open(os.path.join(root, "paper-figures", "tasks-cpu", "flipflop.csv")) as f:
            row = next(r for r in csv.DictReader(f) if r["scheme"] == "rope" and r["layers"] == "1"
                       and r["seed"] == "1" and r["set"] == "length" and r["p"] == "0.8" and r["eval_len"] == "512")
        (s,) = routelab.task_sets(model_file, "1x")
        self.assertEqual((s["sequences"], len(s["reads"])), (int(row["sequences"]), int(row["reads"])))
        model = rt.from_safetensors(model_file, dtype=torch.float64)
        self.assertEqual(rt.task_errors(model, s), int(row["errors"]))
        self.assertNotEqual(read_byte_errors(model, s), int(row["errors"]))  # planted: the read byte as its answer
        # A file that is not an export is refused, naming it.
        with tempfile.NamedTemporaryFile(suffix=".safetensors") as bad:
            bad.write(b"not a safetensors file")
            bad.flush()
            with self.assertRaisesRegex(Exception, bad.name):
                routelab.task_sets(bad.name, "1x")


if __name__ == "__main__":
    unittest_main_with_binary("test_task_torch.py")
