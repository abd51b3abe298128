"""The rules that protect a run live in the library, so Python gets them as the CLI does (issue 52), with real
processes both ways: while the CLI trains a run folder, Python's train (resume), probe, passkey and export into it
are refused naming the CLI's PID, and while a Python process trains one, the CLI's train, eval, passkey, probe and
export into it are refused naming that process; a Python process stopped by SIGTERM removes its lock file. A lock
path that is a link is refused from Python as from the CLI, with the file it points at untouched; a damaged log
stops a resume; the memory preflight reads the process's limits. Integer arguments out of their range are one-line
ValueErrors, not pybind11's conversion errors.

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
    """Every file under `folder` with its bytes (a symbolic link: where it points)."""
    out = {}
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            if os.path.islink(path):
                out[os.path.relpath(path, folder)] = "link to " + os.readlink(path)
                continue
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
            self.assert_the_signal_removes_the_lock(py, run, signal.SIGTERM, (-signal.SIGTERM,))
        finally:
            py.kill()
            py.wait()

    def assert_the_signal_removes_the_lock(self, py, run, sig, statuses):
        """Sends `sig` to a Python process training `run`: it ends with one of `statuses`, its lock file gone and
        its checkpoint kept."""
        os.kill(py.pid, sig)
        os.kill(py.pid, signal.SIGCONT)
        self.assertIn(py.wait(timeout=60), statuses)
        self.assertFalse(os.path.exists(os.path.join(run, LOCK)))
        self.assertTrue(os.path.exists(os.path.join(run, "checkpoint.bin")))

    def test_sigint_and_sighup_remove_python_s_lock(self):
        # SIGINT: Python's own handler stays; its KeyboardInterrupt unwinds through the lock's destructor. SIGHUP:
        # the module's handler removes the lock file, then the process dies of the signal.
        for sig in (signal.SIGINT, signal.SIGHUP):
            with self.subTest(signal.Signals(sig).name):
                run = os.path.join(self.work, f"stopped-by-{int(sig)}")
                code = f"import routelab; routelab.train({self.long!r}, {run!r}, threads=1)"
                env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
                py = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
                try:
                    self.assertTrue(wait_until_it_holds(py, run), "the Python process ended before it held its lock")
                    self.assert_the_signal_removes_the_lock(py, run, sig,
                                                            (-sig, 1) if sig == signal.SIGINT else (-sig,))
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

    def test_a_lock_path_that_is_a_link_is_refused(self):
        run = routelab.train(self.short, os.path.join(self.work, "linked"), threads=1)
        victim = os.path.join(self.work, "victim.txt")
        with open(victim, "w") as f:
            f.write("keep me\n")
        fresh = os.path.join(self.work, "linked-fresh")
        os.makedirs(fresh)
        calls = (("train --resume", run.path, lambda: routelab.train(self.short, run.path, resume=True, threads=1)),
                 ("train", fresh, lambda: routelab.train(self.short, fresh, threads=1)),
                 ("probe", run.path, lambda: run.probe("1x", window=2, max_windows=1)),
                 ("passkey", run.path, lambda: run.passkey("128", depths=[0.5], trials=1)),
                 ("export", run.path, lambda: run.export(os.path.join(run.path, "m.safetensors"))))
        for target in (victim, os.path.join(self.work, "made-by-the-lock")):
            for name, folder, call in calls:
                with self.subTest(name, target=target):
                    lock = os.path.join(folder, LOCK)
                    os.symlink(target, lock)
                    try:
                        before = snapshot(self.work)
                        with self.assertRaises(ValueError) as e:
                            call()
                        self.assertIn(f"the lock path {lock} is a symbolic link", str(e.exception))
                        self.assertNotIn("\n", str(e.exception))
                        self.assertEqual(snapshot(self.work), before)
                    finally:
                        os.remove(lock)
        with open(victim) as f:
            self.assertEqual(f.read(), "keep me\n")
        self.assertFalse(os.path.lexists(os.path.join(self.work, "made-by-the-lock")))

    def test_a_resume_over_a_damaged_log_is_refused(self):
        run = routelab.train(self.short, os.path.join(self.work, "damaged-log"), threads=1)
        log = os.path.join(run.path, "train.csv")
        with open(log) as f:
            text = f.read()
        with open(log, "w") as f:
            f.write(text[:-5])
        before = snapshot(run.path)
        with self.assertRaises(ValueError) as e:
            routelab.train(self.short, run.path, resume=True, threads=1)
        self.assertIn("is damaged (it ends inside a row: the file was cut)", str(e.exception))
        self.assertEqual(snapshot(run.path), before)

    def test_the_memory_preflight_reads_the_process_limits(self):
        big = os.path.join(self.work, "big.toml")
        with open(big, "w") as f:
            f.write(tiny_config("rope", "", self.corpus, 10).replace("context = 16", "context = 4096")
                    .replace("d_model = 24", "d_model = 240").replace("batch = 4", "batch = 16"))
        out = os.path.join(self.work, "big-run")
        # The limit leaves this interpreter 1.5 GB above what it has mapped, less than the model needs.
        code = ("import resource, routelab\n"
                "vm = int([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmSize:')][0]) * 1024\n"
                "resource.setrlimit(resource.RLIMIT_AS, (vm + 1500 * 2**20, resource.RLIM_INFINITY))\n"
                "try:\n"
                f"    routelab.train({big!r}, {out!r}, threads=1)\n"
                "except ValueError as e:\n"
                "    print(e)\n")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("GiB this process's limits leave it (ulimit -v, ulimit -d)", r.stdout)
        self.assertFalse(os.path.exists(out))



if __name__ == "__main__":
    unittest_main_with_binary("test_library_rules")
