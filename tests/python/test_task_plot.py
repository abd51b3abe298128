"""plots/tasks.py's flip-flop table (the one the docs splice beside PaTH's Table 1): a scheme run at one
and at two layers keeps its bare name, and PaTH's row, on the one-layer line, and the deeper arm gets a line
of its own with no published row. Needs matplotlib (plots/common.py draws with it)."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = ("scheme,layers,seed,train_len,task,set,p,eval_len,distance,sequences,reads,errors,error_rate,ci_low,"
          "ci_high,read_bits")


def row(scheme, layers, p, errors, reads=1000):
    return (f"{scheme},{layers},1,512,flipflop,length,{p},512,,100,{reads},{errors},{errors / reads},0,1,0")


class TaskTable(unittest.TestCase):
    def table(self, rows):
        with tempfile.TemporaryDirectory() as d:
            csv = os.path.join(d, "ff.csv")
            with open(csv, "w") as f:
                f.write("\n".join([HEADER] + rows) + "\n")
            with open(csv + ".json", "w") as f:
                f.write('{"swept_keys": ["layers"]}')
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


if __name__ == "__main__":
    unittest.main()
