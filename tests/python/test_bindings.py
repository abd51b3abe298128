"""The routelab module against the routelab program (issue 37): simulations give the CLI's numbers at any
thread count, refuse with its one line and write nothing; the family registry, a law's closed forms, its
walks' products and scores; Ctrl-C stops a sweep.

  PYTHONPATH=build/python /usr/bin/python3 tests/python/test_bindings.py --routelab build/routelab
"""
import csv
import io
import math
import os
import signal
import tempfile
import threading
import time
import unittest

import numpy as np

import routelab
from helpers import unittest_main_with_binary, run_cli

ROUTELAB = None


def cli_columns(text):
    rows = list(csv.reader(io.StringIO(text)))
    return rows[0], rows[1:]


def same_as_cli(test, cols, cli_text):
    """Every cell of the CLI's CSV equals the array's value (numbers exactly, empty as NaN)."""
    names, rows = cli_columns(cli_text)
    test.assertEqual(list(cols), names)
    for j, name in enumerate(names):
        a = cols[name]
        test.assertEqual(len(a), len(rows), name)
        for i, r in enumerate(rows):
            cell = r[j]
            if a.dtype.kind in "if":
                want = math.nan if cell == "" else float(cell)
                got = float(a[i])
                test.assertTrue(got == want or (math.isnan(got) and math.isnan(want)), (name, i, got, cell))
            else:
                test.assertEqual(a[i], cell, (name, i))


class Simulations(unittest.TestCase):
    # One small point set per simulation, every one of them (routelab.sims()).
    FLAGS = {
        "spectral-gap": {"family": "householder,so2", "d": "2,4"},
        "moment-decay": {"family": "so2", "d": "2", "a": "0.5,1", "n": "1,5", "eps": "0.1"},
        "haar-mixing": {"family": "householder", "d": "4", "n": "1,4"},
        "softmax-scale": {"rho-star": "0.05", "a-star": "0.01"},
        # Small sizes: the defaults walk to 100000 steps or 20000 offsets.
        "score-tail": {"family": "so2", "d": "2", "n": "1,8", "s": "0.5,0.9"},
        "random-variant": {"d": "8", "n": "10,100"},
        "value-transport": {"blocks": "4", "L": "200", "w": "9"},
        "adaptive-selection": {"M": "1000"},
    }

    def run_both(self, name, flags, samples, threads):
        args = ["sim", name, "--samples", str(samples), "--seed", "7", "--threads", "1"]
        for k, v in flags.items():
            args += ["--" + k, v]
        _, out, _ = run_cli(ROUTELAB, *args)
        kw = {k.replace("-", "_"): v for k, v in flags.items()}
        return out, routelab.sim(name, samples=samples, seed=7, threads=threads, **kw)

    def test_every_simulation_matches_the_cli_at_one_and_two_threads(self):
        for s in routelab.sims():
            with self.subTest(sim=s["name"]):
                flags = self.FLAGS.get(s["name"], {})
                cli, one = self.run_both(s["name"], flags, 200, 1)
                same_as_cli(self, one, cli)
                two = routelab.sim(s["name"], samples=200, seed=7, threads=2,
                                   **{k.replace("-", "_"): v for k, v in flags.items()})
                same_as_cli(self, two, cli)

    def test_measured_columns_are_the_cli_numbers_bit_for_bit(self):
        # The measured values are the doubles the simulation computed, handed to NumPy (no text in between):
        # the CLI's CSV, parsed, has the same bits (shortest round-trip text; an empty cell is the one quiet
        # NaN), and the same seed gives the same bits at one and two threads.
        for name in ("spectral-gap", "moment-decay", "score-tail", "value-transport"):
            with self.subTest(sim=name):
                flags = self.FLAGS[name]
                cli, one = self.run_both(name, flags, 300, 1)
                two = routelab.sim(name, samples=300, seed=7, threads=2,
                                   **{k.replace("-", "_"): v for k, v in flags.items()})
                names, rows = cli_columns(cli)
                for col in ("estimate", "stderr", "ci_low", "ci_high", "theory"):
                    j = names.index(col)
                    parsed = np.array([math.nan if r[j] == "" else float(r[j]) for r in rows])
                    a = one[col]
                    self.assertEqual(a.dtype, np.float64)
                    self.assertEqual(type(a.base).__name__, "PyCapsule", "the array owns the C++ buffer")
                    self.assertTrue(np.array_equal(a.view(np.uint64), parsed.view(np.uint64)), (col, a, parsed))
                    self.assertTrue(np.array_equal(two[col].view(np.uint64), a.view(np.uint64)), col)
                self.assertTrue(any(np.isnan(one[c]).any() for c in ("stderr", "theory", "ci_low")),
                                "an empty cell among the measured columns, so NaN is compared too")

    def test_python_values_as_flags(self):
        # Lists sweep, numbers print as the CLI reads them.
        cols = routelab.sim("moment-decay", family="so2", d=2, a=[0.5, 1.0], n=[1, 5], eps=0.1, samples=200, seed=7)
        _, out, _ = run_cli(ROUTELAB, "sim", "moment-decay", "--family", "so2", "--d", "2", "--a", "0.5,1.0", "--n",
                            "1,5", "--eps", "0.1", "--samples", "200", "--seed", "7")
        same_as_cli(self, cols, out)
        self.assertEqual(cols["samples"].dtype, np.int64)
        self.assertEqual(cols["estimate"].dtype, np.float64)
        # Measured values are float64 even where every one prints as an integer (Example 2 at d = 2: 0).
        gap = routelab.sim("spectral-gap", family="householder", d=2, samples=100)
        self.assertEqual(gap["theory"].dtype, np.float64)
        self.assertEqual(gap["d"].dtype, np.int64)

    def test_numpy_integers_and_arrays_are_the_numbers_they_hold(self):
        import pandas as pd
        want = routelab.sim("spectral-gap", family="householder", d=[2, 4, 6, 8], samples=200, seed=3)
        for d in (np.arange(2, 10, 2), pd.Series([2, 4, 4, 6, 8]).unique(), [np.int64(2), np.int32(4), 6, 8],
                  pd.DataFrame({"d": [2, 4, 6, 8]}).d):
            with self.subTest(d=d):
                got = routelab.sim("spectral-gap", family="householder", d=d, samples=np.int64(200), seed=np.int64(3))
                self.assertTrue(np.array_equal(got["estimate"], want["estimate"]))
                self.assertTrue(np.array_equal(got["d"], want["d"]))
        one = routelab.sim("moment-decay", family="so2", d=np.int64(2), a=np.float64(0.5), n=np.array([1, 5]),
                           eps=np.float32(0.25), samples=200, seed=7)
        _, out, _ = run_cli(ROUTELAB, "sim", "moment-decay", "--family", "so2", "--d", "2", "--a", "0.5", "--n",
                            "1,5", "--eps", "0.25", "--samples", "200", "--seed", "7")
        same_as_cli(self, one, out)

    def test_none_sets_and_nested_lists_are_refused(self):
        cases = [({"family": "householder", "d": None}, TypeError, "d=None"),
                 ({"family": {"householder", "so2"}}, TypeError, "family={"),
                 ({"family": "householder", "d": [[2], [4]]}, TypeError, "d=[[2], [4]]: a list of lists"),
                 ({"family": "householder", "d": np.ones((2, 2), dtype=int)}, TypeError, "d: an array of 2 axes"),
                 ({"family": "householder", "d": []}, ValueError, "d=[]"),
                 ({"famly": "householder"}, ValueError, "famly='householder': unknown flag"),
                 ({"family": "householder", "d": 4.0}, ValueError, "d=4.0: '4.0' is not accepted")]
        for flags, kind, start in cases:
            with self.subTest(flags=flags), tempfile.TemporaryDirectory() as d:
                with self.assertRaises(kind) as e:
                    routelab.sim("spectral-gap", samples=100, out=os.path.join(d, "x.csv"), **flags)
                self.assertTrue(str(e.exception).startswith(start), str(e.exception))
                self.assertNotIn("--", str(e.exception))
                self.assertEqual(os.listdir(d), [])
        # A list-valued flag takes one list, and a list of lists sweeps it.
        one = routelab.sim("spectral-gap", family="skewexp", d=4, lambdas=[1.0, 0.5], samples=100)
        self.assertEqual(set(one["lambdas"]), {"1.0,0.5"})
        two = routelab.sim("spectral-gap", family="skewexp", d=4, lambdas=[[1.0, 0.5], np.array([1.0, 0.3])],
                           samples=100)
        self.assertEqual(sorted(set(two["lambdas"])), ["1.0,0.3", "1.0,0.5"])
        with self.assertRaises(TypeError):
            routelab.sim("spectral-gap", family="skewexp", d=4, lambdas=[[1.0], 0.5], samples=100)

    def test_every_public_name_is_listed(self):
        names = dir(routelab)
        for name in routelab.__all__ + ["torch", "git_revision"]:
            self.assertIn(name, names)
        for name in names:
            if not name.startswith("_"):
                getattr(routelab, name)  # each resolves
        self.assertIn("products", dir(routelab.step_law("so2", d=2)))

    def test_out_writes_the_cli_bytes_and_a_sidecar(self):
        with tempfile.TemporaryDirectory() as d:
            mine, theirs = os.path.join(d, "py.csv"), os.path.join(d, "cli.csv")
            routelab.sim("spectral-gap", family="so2", d=4, samples=300, out=mine)
            run_cli(ROUTELAB, "sim", "spectral-gap", "--family", "so2", "--d", "4", "--samples", "300", "--out", theirs)
            with open(mine, "rb") as a, open(theirs, "rb") as b:
                self.assertEqual(a.read(), b.read())
            self.assertTrue(os.path.exists(mine + ".json"))

    def test_bad_flags_raise_the_cli_line_and_write_nothing(self):
        cases = [("spectral-gap", {"family": "nosuch"}), ("spectral-gap", {"family": "so2", "d": "3"}),
                 ("spectral-gap", {"bogus": "1"}), ("moment-decay", {"family": "so2", "eps": "2"}),
                 ("nosuch", {}), ("spectral-gap", {"samples": "1"})]
        for name, flags in cases:
            with self.subTest(name=name, flags=flags), tempfile.TemporaryDirectory() as d:
                out = os.path.join(d, "x.csv")
                args = ["sim", name, "--out", out]
                for k, v in flags.items():
                    args += ["--" + k, v]
                status, _, err = run_cli(ROUTELAB, *args, check=False)
                self.assertEqual(status, 2)
                with self.assertRaises(ValueError) as e:
                    routelab.sim(name, out=out, **flags)
                # The CLI's line, its flags in Python's words.
                cli = err.strip()[len("routelab: "):]
                self.assertEqual(str(e.exception), routelab._python_words(cli, {**flags, "name": name},
                                                                          {"sim": "name"}))
                self.assertNotIn("--", str(e.exception))
                self.assertEqual(os.listdir(d), [])

    def test_progress_and_ctrl_c(self):
        seen = []
        routelab.sim("spectral-gap", family="so2", d=[2, 4, 6], samples=200, progress=lambda i, n: seen.append((i, n)))
        self.assertEqual(seen, [(1, 3), (2, 3), (3, 3)])
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "x.csv")

            def interrupt(i, n):
                if i == 1:
                    os.kill(os.getpid(), signal.SIGINT)
            with self.assertRaises(KeyboardInterrupt):
                routelab.sim("spectral-gap", family="so2", d=[2, 4, 6], samples=200, out=out, progress=interrupt)
            self.assertEqual(os.listdir(d), [])

    def test_the_gil_is_released_while_a_simulation_runs(self):
        # Another Python thread keeps running while a sweep works: it counts while the sim's thread is alive.
        done = threading.Event()
        result = {}

        def work():
            result["cols"] = routelab.sim("spectral-gap", family="householder", d=[8, 16], samples=200000, threads=1)
            done.set()
        t = threading.Thread(target=work)
        ticks = 0
        t.start()
        while not done.is_set():
            ticks += 1
            time.sleep(0.001)
        t.join()
        self.assertGreater(ticks, 20)
        self.assertEqual(len(result["cols"]["estimate"]), 4)

    def test_help_lists_every_simulation_and_its_flags(self):
        doc = routelab.sim.__doc__
        for s in routelab.sims():
            self.assertIn("routelab sim " + s["name"], doc)
            for f in s["flags"]:
                self.assertIn("--" + f["name"], doc)
        self.assertEqual(routelab.sim_help("spectral-gap"), run_cli(ROUTELAB, "sim", "spectral-gap", "--help")[1])


class StepLaws(unittest.TestCase):
    def test_registry_is_the_cli_listing(self):
        _, out, _ = run_cli(ROUTELAB, "families")
        names = [line for line in out.splitlines() if line and not line.startswith(" ")]
        self.assertEqual([f["name"] for f in routelab.families()], names)
        for f in routelab.families():
            self.assertIn(f"  closed forms: {f['closed_forms']}", out)
        self.assertIn("d", [f["name"] for f in routelab.family_flags()])

    def test_closed_forms_and_walks(self):
        law = routelab.step_law("householder", d=4)
        self.assertAlmostEqual(law.gap, 0.5, places=12)  # Example 2: 1 - 2/d
        self.assertEqual(law.mean.shape, (4, 4))
        P = law.products([1, 3], samples=4000, seed=3, threads=1)
        self.assertEqual(P.shape, (4000, 2, 4, 4))
        # The sample mean of P_1 against E[M], entrywise within 5 standard errors.
        se = P[:, 0].std(axis=0) / math.sqrt(len(P))
        self.assertTrue(np.all(np.abs(P[:, 0].mean(axis=0) - law.mean) <= 5 * se + 1e-12))
        # Orthogonal, the same at any thread count, and the scores read the same walks.
        self.assertLess(np.abs(P[:, 1] @ P[:, 1].transpose(0, 2, 1) - np.eye(4)).max(), 1e-12)
        self.assertTrue(np.array_equal(P, law.products([1, 3], samples=4000, seed=3, threads=2)))
        S = law.scores(3, samples=4000, seed=3)
        self.assertEqual(S.shape, (4000, 3))
        self.assertLess(np.abs(S[:, 0] - P[:, 0, 0, 0]).max(), 1e-12)
        self.assertLess(np.abs(S[:, 2] - P[:, 1, 0, 0]).max(), 1e-12)
        self.assertFalse(np.array_equal(S, law.scores(3, samples=4000, seed=4)))

    def test_bad_law_flags(self):
        with self.assertRaises(ValueError) as e:
            routelab.step_law("so2", p=0.5)
        self.assertEqual(str(e.exception), "p=0.5: does not apply to family so2; it takes d=, a=, omega=, rope_base=")
        with self.assertRaises(ValueError):
            routelab.step_law("so2", d=3)
        with self.assertRaises(ValueError):
            routelab.step_law("householder", d=4).products([3, 1], samples=10)

    def test_numpy_and_pandas_values(self):
        law = routelab.step_law("householder", d=np.int64(4))
        self.assertEqual(law.d, 4)
        self.assertTrue(np.array_equal(law.products(np.array([1, 3]), samples=np.int32(50), seed=np.uint8(2)),
                                       law.products([1, 3], samples=50, seed=2)))
        self.assertEqual(law.scores(np.int64(3), samples=10, q=np.ones(4), k=[1.0, 0, 0, 0]).shape, (10, 3))

    def test_refusals_name_the_keyword_and_never_dump_a_signature(self):
        law = routelab.step_law("householder", d=4)
        for call, keyword in ((lambda: law.products([1, 3], samples=100.0), "samples=100.0"),
                              (lambda: law.products({1, 3}, samples=10), "lengths={1, 3}"),
                              (lambda: law.scores(3, samples=10, threads="2"), "threads='2'"),
                              (lambda: routelab.step_law("householder", d=[4, 6]), "d=[4, 6]"),
                              (lambda: routelab.step_law(4), "family=4")):
            with self.subTest(keyword=keyword):
                with self.assertRaises(TypeError) as e:
                    call()
                self.assertTrue(str(e.exception).startswith(keyword), str(e.exception))
                self.assertNotIn("incompatible function arguments", str(e.exception))
        with self.assertRaises(ValueError) as e:
            law.products([3, 1], samples=10)
        self.assertTrue(str(e.exception).startswith("n=: walk lengths"), str(e.exception))

    def test_mixing_window_is_the_theory_s(self):
        self.assertEqual(routelab.mixing_window(0.5, 0.05), 5)
        self.assertEqual(routelab.mixing_window(1.0, 0.05), -1)
        try:
            import routelab.torch as rt
        except ImportError:
            return
        for beta in np.linspace(0, 1, 41):
            for eps in (0.5, 0.05, 1e-3):
                self.assertEqual(rt.mixing_window(float(beta), eps), routelab.mixing_window(float(beta), eps))


if __name__ == "__main__":
    unittest_main_with_binary("test_bindings")
