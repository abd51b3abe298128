"""routelab installed as Python users install it (issue 53): docs/python.md's "With pip" blocks run as written,
in a repository copy with the suite's build as build/ and a fresh HOME: a venv made with --system-site-packages
(Debian's numpy, pandas, torch), `pip install --no-build-isolation .` (setup.py builds the module with CMake,
offline), an import and a simulation from the venv, uninstall; then the same with -e. After each uninstall the
venv must no longer import routelab, and the planted check (a venv that never had it) must fail to import.

  PYTHONPATH=build/python /usr/bin/python3 tests/python/test_pip_install.py --build build
"""
import os
import shutil
import subprocess
import tempfile
import time
import unittest

from helpers import ROOT, build_folder, doc_blocks, run_shell_blocks

BUILD = build_folder()
DOC = os.path.join(ROOT, "docs", "python.md")


def imports_routelab(python):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([python, "-c", "import routelab"], env=env, capture_output=True).returncode == 0


class PipInstall(unittest.TestCase):
    def setUp(self):
        if BUILD is None:
            self.skipTest("--build names no build folder")
        self.work = tempfile.mkdtemp(prefix="routelab_pip_")

    def tearDown(self):
        shutil.rmtree(self.work, ignore_errors=True)

    def test_the_docs_pip_blocks(self):
        blocks = [code for lang, heading, code in doc_blocks(DOC) if lang == "sh" and heading == "With pip"]
        self.assertEqual(len(blocks), 2, "docs/python.md's With pip: the install block and the -e block")
        self.assertIn("pip install --no-build-isolation .", blocks[0])
        self.assertIn("pip install --no-build-isolation -e .", blocks[1])
        t0 = time.perf_counter()
        status, out = run_shell_blocks(blocks, self.work, BUILD)
        self.assertEqual(status, 0, out)
        print(f"test_pip_install: the two blocks in {time.perf_counter() - t0:.1f} s", flush=True)
        venv_python = os.path.join(self.work, "home", "venvs", "routelab", "bin", "python")
        self.assertIn("Successfully installed routelab", out)
        self.assertEqual(out.count("Successfully uninstalled routelab"), 2, out)
        self.assertFalse(imports_routelab(venv_python), "still importable after pip uninstall")

    def test_a_venv_without_it_does_not_import_it(self):
        # Planted: the check above is not vacuous; Debian's site-packages do not hold routelab.
        venv = os.path.join(self.work, "bare")
        subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", "--without-pip", venv], check=True)
        self.assertFalse(imports_routelab(os.path.join(venv, "bin", "python")))


if __name__ == "__main__":
    unittest.main()
