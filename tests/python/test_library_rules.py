"""The rules that protect a run live in the library, so Python gets them as the CLI does (issue 52), with real
processes both ways: while the CLI trains a run folder, Python's train (resume), probe, passkey and export into it
are refused naming the CLI's PID, and while a Python process trains one, the CLI's train, eval, passkey, probe and
export into it are refused naming that process; a Python process stopped by SIGTERM removes its lock file. Integer
arguments out of their range are one-line ValueErrors, not pybind11's conversion errors.

  PYTHONPATH=build/python /usr/bin/python3 tests/python/test_library_rules.py --routelab build/routelab
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import routelab
from helpers import make_corpus, run_cli, tiny_config, unittest_main_with_binary

ROUTELAB = None
LOCK = ".routelab.lock"


def snapshot(folder):
    """Every file under `folder` with its bytes."""
    out = {}
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, folder)] = f.read()
    return out


def wait_until_it_holds(proc, run):
    """Waits until `proc` has written its PID into `run`'s lock and its first checkpoint is there, then stops it
    (SIGSTOP), so that it holds the lock as long as the test needs. False if it ended first."""
    want = f"{proc.pid}\n"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with open(os.path.join(run, LOCK)) as f:
                held = f.read() == want
        except OSError:
            held = False
        if held and os.path.exists(os.path.join(run, "checkpoint.bin")):
            os.kill(proc.pid, signal.SIGSTOP)
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.002)
    return False


class LibraryRules(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="routelab_test_rules_")
        cls.corpus = make_corpus(cls.work, 6000)
        cls.long = os.path.join(cls.work, "long.toml")  # long enough to be seen holding its lock
        with open(cls.long, "w") as f:
            f.write(tiny_config("rope", "", cls.corpus, 200000).replace("checkpoint_every = 200000",
                                                                           "checkpoint_every = 10"))
        cls.short = os.path.join(cls.work, "short.toml")
        with open(cls.short, "w") as f:
            f.write(tiny_config("rope", "", cls.corpus, 10))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def test_python_is_refused_while_the_cli_trains(self):
        run = os.path.join(self.work, "cli-holds")
        cli = subprocess.Popen([ROUTELAB, "train", "--config", self.long, "--out", run, "--quiet", "--threads", "1"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            self.assertTrue(wait_until_it_holds(cli, run), "the CLI ended before it was seen holding its lock")
            before = snapshot(run)
            held = routelab.load_run(run)  # reading takes no lock
            says = f"is in use by process {cli.pid}"
            for name, call in (("train", lambda: routelab.train(self.long, run, resume=True, threads=1)),
                               ("probe", lambda: held.probe("1x", window=2, max_windows=1)),
                               ("passkey", lambda: held.passkey("128", depths=[0.5], trials=1)),
                               ("export", lambda: held.export(os.path.join(run, "m.safetensors")))):
                with self.subTest(name):
                    with self.assertRaises(ValueError) as e:
                        call()
                    self.assertIn(says, str(e.exception))
                    self.assertNotIn("\n", str(e.exception))
            self.assertEqual(snapshot(run), before)
            self.assertEqual(len(held.eval("1x")["lengths"]["bits_per_byte"]), 1)
        finally:
            cli.kill()
            cli.wait()

    def test_the_cli_is_refused_while_python_trains_and_sigterm_removes_python_s_lock(self):
        run = os.path.join(self.work, "python-holds")
        code = (f"import routelab; routelab.train({self.long!r}, {run!r}, threads=1)")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        py = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
        try:
            self.assertTrue(wait_until_it_holds(py, run), "the Python process ended before it held its lock")
            before = snapshot(run)
            says = f"the run folder {run} is in use by process {py.pid}"
            for args in (["train", "--config", self.long, "--out", run, "--resume", "--quiet"],
                         ["eval", "--run", run, "--lengths", "1x", "--quiet"],
                         ["passkey", "--run", run, "--lengths", "128", "--trials", "1", "--quiet"],
                         ["probe", "--run", run, "--lengths", "1x", "--window", "2", "--max-windows", "1", "--quiet"],
                         ["export", "--run", run, "--out", os.path.join(run, "m.safetensors")]):
                with self.subTest(args[0]):
                    status, out, err = run_cli(ROUTELAB, *args, check=False)
                    self.assertEqual(status, 2, err)
                    self.assertIn(says, err)
                    self.assertEqual(err.count("\n"), 1, err)
            # Another Python process's lock stops this one too.
            with self.assertRaises(ValueError) as e:
                routelab.train(self.long, run, resume=True, threads=1)
            self.assertIn(f"in use by process {py.pid}", str(e.exception))
            self.assertEqual(snapshot(run), before)
            # SIGTERM: the module's handler removes the lock file, then the process dies of the signal.
            os.kill(py.pid, signal.SIGTERM)
            os.kill(py.pid, signal.SIGCONT)
            self.assertEqual(py.wait(timeout=60), -signal.SIGTERM)
            self.assertFalse(os.path.exists(os.path.join(run, LOCK)))
            self.assertTrue(os.path.exists(os.path.join(run, "checkpoint.bin")))
        finally:
            py.kill()
            py.wait()

    def test_integers_out_of_range_are_one_line_value_errors(self):
        run = routelab.train(self.short, os.path.join(self.work, "ranges"), threads=1)
        for call, says in ((lambda: run.eval("1x", threads=2**40), "1099511627776 is not accepted"),
                           (lambda: run.probe("1x", max_windows=2**40), "max_windows="),
                           (lambda: run.passkey("128", seed=-1), "seed=-1: at least 0"),
                           (lambda: run.passkey("128", seed=2**63), "an integer in [0, 2^62]"),
                           (lambda: run.passkey("128", trials=2**40), "an integer in [1, 100000]"),
                           (lambda: run.passkey("128", trials=2**70), "trials=1180591620717411303424: not accepted"),
                           (lambda: run.eval("1x", threads=2**64), "threads=18446744073709551616: not accepted")):
            with self.subTest(says):
                with self.assertRaises(ValueError) as e:
                    call()
                self.assertIn(says, str(e.exception))
                self.assertNotIn("\n", str(e.exception))
        with self.assertRaises(TypeError) as e:
            routelab.sim(None)
        self.assertNotIn("\n", str(e.exception))
        self.assertEqual(sorted(os.listdir(run.path)), ["checkpoint.bin", "config.toml", "train.csv"])


if __name__ == "__main__":
    unittest_main_with_binary("test_library_rules")
