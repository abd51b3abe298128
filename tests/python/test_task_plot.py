"""plots/tasks.py's flip-flop table (the one the docs splice beside PaTH's Table 1): a scheme run at one
and at two layers keeps its bare name, and PaTH's row, on the one-layer line, and the deeper arm gets a line
of its own with no published row; and the distance panel's windows are the runs' own rows of `routelab claims
--readings`, matched by setting. Needs matplotlib (plots/common.py draws with it)."""
import contextlib
import io
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = ("scheme,layers,seed,train_len,task,set,p,eval_len,distance,sequences,reads,errors,error_rate,ci_low,"
          "ci_high,read_bits")


sys.path.insert(0, os.path.join(ROOT, "plots"))
import tasks  # noqa: E402


def row(scheme, layers, p, errors, reads=1000, seed=1):
    return (f"{scheme},{layers},{seed},512,flipflop,length,{p},512,,100,{reads},{errors},{errors / reads},0,1,0")


def distance_row(scheme, layers, seed, distance=64):
    return f"{scheme},{layers},{seed},512,flipflop,distance,0.8,512,{distance},100,100,10,0.1,0,1,0"


def write_csv(d, rows):
    csv = os.path.join(d, "ff.csv")
    with open(csv, "w") as f:
        f.write("\n".join([HEADER] + rows) + "\n")
    with open(csv + ".json", "w") as f:
        f.write('{"swept_keys": ["layers"]}')
    return csv


class TaskTable(unittest.TestCase):
    def table(self, rows):
        with tempfile.TemporaryDirectory() as d:
            csv = write_csv(d, rows)
            out = os.path.join(d, "t.md")
            r = subprocess.run([sys.executable, os.path.join(ROOT, "plots", "tasks.py"), csv, "--table", out],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                return {line.split(" | ")[0].lstrip("| "): line for line in f if line.startswith("| ")}

    def test_one_layer_keeps_the_scheme_name_and_paths_row(self):
        rows = [row(s, layers, p, e) for s in ("rope", "nope") for layers, e in ((1, 200), (2, 1))
                for p in (0.8, 0.98, 0.1)]
        lines = self.table(rows)
        self.assertIn("rope", lines)
        self.assertIn("RoPE: 6.9 / 40.3 / 0.01", lines["rope"])
        self.assertIn("| 20.0 |", lines["rope"])
        self.assertIn("rope layers=2", lines)
        self.assertIn("| 0.1 |", lines["rope layers=2"])
        self.assertNotIn("RoPE", lines["rope layers=2"])
        self.assertIn("nope layers=2", lines)
        self.assertNotIn("rope layers=1", lines)


READINGS = "setting,scheme,seed,window,short_reads,short_errors,learned,observed_break,largest_distance,window_rule"


class Windows(unittest.TestCase):
    def windows(self, readings):
        rows = [distance_row(s, layers, seed) for s in ("rope", "learned_qkv") for layers in (1, 2) for seed in (1, 2)]
        with tempfile.TemporaryDirectory() as d:
            loaded = tasks.load(write_csv(d, rows))
            path = os.path.join(d, "readings.csv")
            with open(path, "w") as f:
                f.write("\n".join(readings) + "\n")
            return tasks.windows_of(path, loaded)

    def test_each_run_gets_its_own_settings_window(self):
        w = self.windows([READINGS,
                          "flipflop layers=1,learned_qkv,1,17,1200,10,true,64,2048,true",
                          "flipflop layers=1,learned_qkv,2,12,1200,10,true,64,2048,true",
                          "flipflop layers=2,learned_qkv,1,11,1200,10,true,64,2048,false",
                          "flipflop layers=2,rope,1,inf,1200,10,true,64,2048,",
                          "flipflop layers=1,rope,1,,1200,10,true,64,2048,"])
        self.assertEqual(w, {("flipflop", "learned_qkv", 1): 17, ("flipflop", "learned_qkv", 2): 12,
                             ("flipflop", "learned_qkv layers=2", 1): 11,
                             ("flipflop", "rope layers=2", 1): float("inf")})

    def refused(self, readings):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as e:
            self.windows(readings)
        self.assertEqual(e.exception.code, 2)
        return err.getvalue()

    def test_readings_of_other_runs_are_refused(self):
        other = "latest-value layers=1,learned_qkv,1,17,1,1,true,8,2048,"
        self.assertIn("none of its runs", self.refused([READINGS, other]))

    def test_text_readings_are_refused(self):
        self.assertIn("not task readings", self.refused(["setting,scheme,seed,window,bits_per_byte", "a,rope,1,2,3"]))


if __name__ == "__main__":
    unittest.main()
