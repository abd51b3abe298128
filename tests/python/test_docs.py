"""docs/python.md runs as written (issue 53): every Python block, in order, as one session started at the
repository's root (as the page says), and every shell block but the pip ones (test_pip_install.py runs those) from
a repository copy with the suite's build as build/. A block that raises fails the test, naming its heading; a
planted failing block must fail.

  PYTHONPATH=build/python /usr/bin/python3 tests/python/test_docs.py --build build
"""
import contextlib
import io
import os
import shutil
import tempfile
import time
import traceback
import unittest

from helpers import ROOT, build_folder, doc_blocks, run_shell_blocks

BUILD = build_folder()
DOC = os.path.join(ROOT, "docs", "python.md")


def run_python_blocks(blocks):
    """Runs each block in one namespace from the repository's root; (None, output) or (what failed, output)."""
    namespace, out = {"__name__": "__docs__"}, io.StringIO()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        for heading, code in blocks:
            try:
                with contextlib.redirect_stdout(out):
                    exec(compile(code, f"docs/python.md ({heading})", "exec"), namespace)
            except Exception:
                return f"{heading}: {traceback.format_exc()}", out.getvalue()
    finally:
        os.chdir(cwd)
        if "work" in namespace:
            shutil.rmtree(namespace["work"], ignore_errors=True)
    return None, out.getvalue()


class Docs(unittest.TestCase):
    def test_every_python_block(self):
        blocks = [(heading, code) for lang, heading, code in doc_blocks(DOC) if lang == "python"]
        self.assertGreaterEqual(len(blocks), 8)
        t0 = time.perf_counter()
        failed, out = run_python_blocks(blocks)
        self.assertIsNone(failed, failed)
        print(f"test_docs: {len(blocks)} Python blocks in {time.perf_counter() - t0:.1f} s", flush=True)

    def test_every_shell_block_but_pip(self):
        if BUILD is None:
            self.skipTest("--build names no build folder")
        blocks = [code for lang, heading, code in doc_blocks(DOC) if lang == "sh" and heading != "With pip"]
        self.assertGreaterEqual(len(blocks), 2)
        work = tempfile.mkdtemp(prefix="routelab_docs_")
        try:
            status, out = run_shell_blocks(blocks, work, BUILD)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        self.assertEqual(status, 0, out)

    def test_every_block_is_marked(self):
        # A block without a language would be run by neither test.
        self.assertEqual([h for lang, h, _ in doc_blocks(DOC) if lang not in ("python", "sh")], [])

    def test_a_failing_block_fails(self):
        failed, _ = run_python_blocks([("planted", "x = 1"), ("planted", "assert x == 2")])
        self.assertIsNotNone(failed)


if __name__ == "__main__":
    unittest.main()
