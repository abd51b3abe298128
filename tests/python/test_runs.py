"""Trained runs from Python against the routelab program (issue 37): train from a dict with a progress
callback (the CLI's checkpoint, byte for byte), Ctrl-C and resume, eval (the CLI's numbers, without files),
export (the CLI's bytes), passkey, probe (and routelab.torch's mixing windows against its angles), refusals.

  PYTHONPATH=build/python /usr/bin/python3 tests/python/test_runs.py --routelab build/routelab
"""
import csv
import io
import os
import shutil
import signal
import tempfile
import threading
import time
import unittest

import numpy as np

import routelab
from helpers import unittest_main_with_binary, make_corpus, run_cli, tiny_config

ROUTELAB = None
STEPS = 12


def config_dict(corpus, scheme="learned_qkv", steps=STEPS, every=STEPS, numbers=int):
    """The tiny run's tables; numbers=np.int64 writes the integers as numpy's (a DataFrame's cells)."""
    n = numbers
    return {"model": {"d_model": n(24), "heads": n(3), "layers": n(2), "mlp_ratio": n(2), "context": n(16),
                      "scheme": scheme},
            "train": {"batch": n(4), "warmup": n(2), "steps": n(steps), "lr": 3e-3 if n is int else np.float64(3e-3),
                      "checkpoint_every": n(every), "log_every": n(4)},
            "data": {"corpus": corpus}}


def read(path):
    with open(path, "rb") as f:
        return f.read()


class Runs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="routelab_test_runs_")
        cls.corpus = make_corpus(cls.work, 6000)
        cls.seen = []
        # numpy's integers and floats in the dict: the same run as the CLI's (test_train_from_a_dict...).
        cls.py_run = routelab.train(config_dict(cls.corpus, numbers=np.int64), os.path.join(cls.work, "py"),
                                    threads=np.int64(1), progress=lambda *a: cls.seen.append(a))
        toml = os.path.join(cls.work, "cli.toml")
        with open(toml, "w") as f:
            f.write(tiny_config("learned_qkv", "", cls.corpus, STEPS).replace("log_every = 100", "log_every = 4"))
        cls.cli_run = os.path.join(cls.work, "cli")
        run_cli(ROUTELAB, "train", "--config", toml, "--out", cls.cli_run, "--quiet", "--threads", "2")
        cls.toml_run = routelab.train(toml, os.path.join(cls.work, "from-toml"), threads=2)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def test_train_from_a_dict_or_a_file_is_the_cli_run(self):
        self.assertEqual([s[:2] for s in self.seen], [(i, STEPS) for i in range(1, STEPS + 1)])
        self.assertTrue(all(np.isfinite(s[2]) for s in self.seen))
        self.assertEqual(read(os.path.join(self.py_run.path, "checkpoint.bin")),
                         read(os.path.join(self.cli_run, "checkpoint.bin")))
        self.assertEqual(read(os.path.join(self.toml_run.path, "checkpoint.bin")),
                         read(os.path.join(self.cli_run, "checkpoint.bin")))
        self.assertEqual(self.py_run.step, STEPS)
        self.assertEqual(self.py_run.scheme, "learned_qkv")
        self.assertEqual(self.py_run.config["model"]["d_model"], 24)
        self.assertEqual(self.py_run.params.dtype, np.float32)

    def test_eval_is_the_cli_eval_and_writes_nothing(self):
        before = sorted(os.listdir(self.py_run.path))
        r = self.py_run.eval("1x,4x", losses=True, threads=2)
        self.assertEqual(sorted(os.listdir(self.py_run.path)), before)
        out = os.path.join(self.work, "eval.csv")
        losses = os.path.join(self.work, "losses.csv")
        _, text, _ = run_cli(ROUTELAB, "eval", "--run", self.cli_run, "--lengths", "1x,4x", "--out", out, "--losses",
                             losses, "--quiet", "--threads", "1")
        rows = list(csv.DictReader(io.StringIO(text)))
        self.assertEqual(list(r["lengths"]["eval_len"]), [int(x["eval_len"]) for x in rows])
        self.assertEqual(list(r["lengths"]["bits_per_byte"]), [float(x["bits_per_byte"]) for x in rows])
        theirs = np.loadtxt(losses, delimiter=",", skiprows=1)
        for L in (16, 64):
            mine = r["losses"][L].reshape(-1)
            want = theirs[theirs[:, 0] == L][:, 3]
            self.assertEqual(len(mine), len(want))
            self.assertLess(np.abs(mine - want).max() / np.abs(want).max(), 1e-8)  # the CLI prints 9 digits
        self.assertEqual(set(r["positions"]["eval_len"]), {16, 64})

    def test_export_is_the_cli_file(self):
        mine, theirs = os.path.join(self.work, "py.safetensors"), os.path.join(self.work, "cli.safetensors")
        self.py_run.export(mine)
        run_cli(ROUTELAB, "export", "--run", self.cli_run, "--out", theirs)
        a, b = read(mine), read(theirs)
        self.assertEqual(len(a), len(b))
        # The metadata names the checkpoint's sha256 and the run's config (its corpus path is the same); the
        # two runs' checkpoints are the same bytes, so the files are.
        self.assertEqual(a, b)

    def test_passkey_is_the_cli_passkey(self):
        mine = self.py_run.passkey("128", depths=[0, 1], trials=2, seed=3, out=os.path.join(self.work, "pk.csv"))
        _, text, _ = run_cli(ROUTELAB, "passkey", "--run", self.cli_run, "--lengths", "128", "--depths", "0,1",
                             "--trials", "2", "--seed", "3", "--out", os.path.join(self.work, "pk-cli.csv"), "--quiet")
        rows = list(csv.DictReader(io.StringIO(text)))
        self.assertEqual(list(mine["accuracy"]), [float(x["accuracy"]) for x in rows])
        self.assertEqual(list(mine["depth"]), [float(x["depth"]) for x in rows])
        self.assertEqual(mine["accuracy"].dtype, np.float64)  # even where every accuracy prints as 0 or 1

    def test_probe_and_the_torch_mixing_windows(self):
        p = self.py_run.probe("1x", window=4, max_windows=2, csv=os.path.join(self.work, "probe.csv"))
        self.assertTrue(np.all(p["rows"]["bound_violations"] == 0))  # Proposition 3 in every row
        self.assertTrue(np.all(p["rows"]["queries"] > 0))
        angles = p["angles"]
        self.assertEqual(len(angles["beta"]), 2 * 4)  # layers x blocks
        try:
            import routelab.torch as rt
        except ImportError:
            self.skipTest("routelab.torch needs python3-torch (scripts/setup.sh installs it)")
        st = os.path.join(self.work, "probe.safetensors")
        self.py_run.export(st)
        val = np.fromfile(os.path.join(self.corpus, "val.txt"), dtype=np.uint8)
        rows = rt.mixing_windows(st, eps=0.05, stream=val)
        self.assertEqual([r["mixing_window"] for r in rows], list(angles["mixing_window"]))
        self.assertLess(max(abs(r["beta"] - b) for r, b in zip(rows, angles["beta"])), 1e-9)

    def test_probe_and_passkey_report_progress(self):
        with tempfile.TemporaryDirectory() as d:
            seen = []
            self.py_run.probe("1x,2x", window=4, max_windows=2, csv=os.path.join(d, "probe.csv"),
                              progress=lambda *a: seen.append(("probe",) + a))
            self.py_run.passkey("128", depths=[0, 1], trials=2, out=os.path.join(d, "pk.csv"),
                                progress=lambda *a: seen.append(("passkey",) + a))
        # probe: each length, then the phase statistics; passkey: each length and depth.
        self.assertEqual(seen, [("probe", 1, 3), ("probe", 2, 3), ("probe", 3, 3), ("passkey", 1, 2),
                                ("passkey", 2, 2)])

    def test_ctrl_c_stops_eval_probe_and_passkey_and_writes_nothing(self):
        # SIGINT from a progress callback: the callback raises KeyboardInterrupt after the first unit.
        def interrupt(done, total):
            if done == 1:
                os.kill(os.getpid(), signal.SIGINT)
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(KeyboardInterrupt):
                self.py_run.probe("1x,2x", window=4, max_windows=2, csv=os.path.join(d, "probe.csv"),
                                  progress=interrupt)
            with self.assertRaises(KeyboardInterrupt):
                self.py_run.passkey("128", depths=[0, 1], trials=2, out=os.path.join(d, "pk.csv"), progress=interrupt)
            with self.assertRaises(KeyboardInterrupt):
                self.py_run.eval("1x,2x", progress=interrupt)
            self.assertEqual(os.listdir(d), [])

    def test_ctrl_c_stops_passkey_between_forward_passes(self):
        # SIGINT from another thread 0.1 s into the second unit (128 trials at 1024 bytes: 16 passes of 8
        # windows): the library's check after each pass stops the work a pass later, where a check between
        # units alone would wait out the unit; nothing is written. Times are compared within the run: the
        # stop comes in under half the time the first unit took.
        times = {}

        def send_sigint():
            times["sent"] = time.perf_counter()
            os.kill(os.getpid(), signal.SIGINT)

        def progress(done, total):
            if done == 1:
                times["unit"] = time.perf_counter() - times["start"]
                threading.Timer(0.1, send_sigint).start()
        with tempfile.TemporaryDirectory() as d:
            times["start"] = time.perf_counter()
            with self.assertRaises(KeyboardInterrupt):
                self.py_run.passkey("1024", depths=[0, 1], trials=128, out=os.path.join(d, "pk.csv"), threads=1,
                                    progress=progress)
            stopped = time.perf_counter()
            self.assertEqual(os.listdir(d), [])
        self.assertLess(stopped - times["sent"], times["unit"] / 2, times)

    def test_refusals_write_nothing(self):
        bad = config_dict(self.corpus, scheme="nosuch")
        out = os.path.join(self.work, "bad")
        with self.assertRaises(ValueError) as e:
            routelab.train(bad, out)
        self.assertIn("[model] scheme 'nosuch' is unknown", str(e.exception))
        self.assertFalse(os.path.exists(out))
        with self.assertRaises(ValueError) as e:
            routelab.load_run(os.path.join(self.work, "nowhere"))
        with self.assertRaises(ValueError):
            self.py_run.eval("0x")
        with self.assertRaises(ValueError):
            self.py_run.export(os.path.join(self.work, "x.bin"))
        self.assertFalse(os.path.exists(os.path.join(self.work, "x.bin")))

    def test_refusals_name_the_python_keyword(self):
        with self.assertRaises(ValueError) as e:
            routelab.train(config_dict(self.corpus), self.py_run.path)
        msg = str(e.exception)
        self.assertIn(f"out={self.py_run.path!r}", msg)
        self.assertIn("pass resume=True to continue it", msg)
        self.assertNotIn("--", msg)
        for call, start in ((lambda: self.py_run.eval("1x", threads="2"), "threads='2': an integer"),
                            (lambda: self.py_run.probe("1x", eps="0.05"), "eps='0.05': a number"),
                            (lambda: self.py_run.passkey("128", depths=0.5), "depths=0.5: a list"),
                            (lambda: routelab.train(config_dict(self.corpus), None), "out=None: a path"),
                            (lambda: routelab.train(config_dict(self.corpus), "x", resume="yes"), "resume='yes'"),
                            (lambda: routelab.train({"model": {"d_model": None}}, "x"), "config [model] d_model")):
            with self.subTest(start=start):
                with self.assertRaises(TypeError) as e:
                    call()
                self.assertTrue(str(e.exception).startswith(start), str(e.exception))
        with self.assertRaises(ValueError) as e:
            self.py_run.eval("0x")
        self.assertTrue(str(e.exception).startswith("lengths='0x': "), str(e.exception))

    def test_a_corpus_path_that_is_not_there_is_named_absolute(self):
        out = os.path.join(self.work, "nocorpus")
        cwd = os.getcwd()
        os.chdir(self.work)
        try:
            with self.assertRaises(ValueError) as e:
                routelab.train(config_dict("data/brown"), out)
        finally:
            os.chdir(cwd)
        want = os.path.join(os.path.realpath(self.work), "data", "brown")
        self.assertIn(f"no folder at {want} (data/brown read from the working directory", str(e.exception))
        self.assertFalse(os.path.exists(out))

    def test_ctrl_c_stops_training_and_resume_finishes_it(self):
        out = os.path.join(self.work, "interrupted")

        def interrupt(step, steps, loss):
            if step == 7:
                os.kill(os.getpid(), signal.SIGINT)
        with self.assertRaises(KeyboardInterrupt):
            routelab.train(config_dict(self.corpus, every=4), out, threads=1, progress=interrupt)
        self.assertEqual(routelab.load_run(out).step, 4)
        done = routelab.train(config_dict(self.corpus, every=4), out, resume=True, threads=1)
        self.assertEqual(done.step, STEPS)
        # Its checkpoints name another checkpoint_every, so the weights, not the files, are compared.
        self.assertTrue(np.array_equal(done.params, self.py_run.params))


if __name__ == "__main__":
    unittest_main_with_binary("test_runs")
