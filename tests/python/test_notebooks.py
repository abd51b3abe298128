"""Every notebook under examples/notebooks/ runs (issue 53): each is executed top to bottom by nbclient in a
fresh python3 kernel (ipykernel), from its own folder, with routelab importable as the test's PYTHONPATH has it;
any cell's error fails the test. The committed notebooks keep no outputs (they are run, not stored), and a
notebook with a failing cell must fail (planted).

  PYTHONPATH=build/python /usr/bin/python3 tests/python/test_notebooks.py
"""
import glob
import os
import sys
import time
import unittest

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from helpers import ROOT, build_folder

build_folder()  # the suite names it; the notebooks need only PYTHONPATH
NOTEBOOKS = sorted(glob.glob(os.path.join(ROOT, "examples", "notebooks", "*.ipynb")))


def execute(nb, folder):
    """Runs every cell of nb in a python3 kernel started in `folder` (a child process: it inherits PYTHONPATH);
    raises CellExecutionError at the first error."""
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": folder}}).execute()
    return nb


class Notebooks(unittest.TestCase):
    def test_there_are_notebooks(self):
        self.assertTrue(NOTEBOOKS, "examples/notebooks/ holds no .ipynb")

    def test_every_notebook_runs(self):
        for path in NOTEBOOKS:
            with self.subTest(notebook=os.path.basename(path)):
                nb = nbformat.read(path, as_version=4)
                t0 = time.perf_counter()
                try:
                    execute(nb, os.path.dirname(path))
                except CellExecutionError as e:
                    self.fail(f"{os.path.relpath(path, ROOT)}: {e}")
                print(f"{os.path.relpath(path, ROOT)}: {len(nb.cells)} cells in {time.perf_counter() - t0:.1f} s",
                      file=sys.stderr)

    def test_committed_notebooks_keep_no_outputs(self):
        for path in NOTEBOOKS:
            nb = nbformat.read(path, as_version=4)
            stored = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
            self.assertEqual(stored, [], f"{os.path.relpath(path, ROOT)}: cells with stored outputs")

    def test_a_failing_cell_fails(self):
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell("assert x == 2, 'planted'")]
        nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
        with self.assertRaises(CellExecutionError):
            execute(nb, ROOT)


if __name__ == "__main__":
    unittest.main()
