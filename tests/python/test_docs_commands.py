"""Every command of the code blocks of README.md and docs/*.md runs as written (issue 52): each page in a fresh copy
of the repository as a clone holds it (the files git tracks, as they are in the working tree), with build/ the
suite's build folder and data/ the corpora scripts/test.sh fetched, so a documented command that a reader's clone
cannot run fails the suite, naming the page, its heading and the command.

What is run: shell blocks (```sh, or unmarked blocks whose first command starts with a program: ./build/routelab,
bash, cmake, python3, ...), one command at a time in page order, each to exit 0; Python blocks (```python) with
PYTHONPATH=build/python as the pages say. Not run: blocks that are no commands (a verify table, the layout, TOML),
CMake code (scripts/test-install.sh builds examples/ against the package), docs/python.md (tests/python/
test_docs.py runs its blocks), and the few commands SKIPPED names, each with its reason; the hours-long configs of
QUICK run on their quick counterparts. `routelab verify` (about 40 s even with --quick) runs in its own test,
DocsVerify (ctest python_docs_verify), which also checks that a sample of its table has the program's header and
names rows it prints; DocsCommands (ctest python_docs_commands) runs the rest in well under a minute.

  PYTHONPATH=build/python /usr/bin/python3 tests/python/test_docs_commands.py --build build [DocsCommands|DocsVerify]
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from helpers import ROOT, build_folder, doc_blocks

BUILD = build_folder()

# Pages whose blocks another test runs.
OTHER_TESTS = {"docs/python.md": "tests/python/test_docs.py runs every block (python_docs, python_pip_install)"}

# Commands (as written, trailing comment aside) that are not run, and why.
SKIPPED = {
    "bash scripts/test.sh": "the test suite itself (this test is part of it)",
    "bash scripts/verify.sh": "every check at default sizes and every figure, about 22 minutes; `routelab verify "
                              "--quick` and `routelab experiment` on the quick config run here instead",
    "./build/routelab experiment experiments/flipflop-cpu.toml": "every scheme x 3 seeds, hours on a CPU; the page's "
                                                                 "quick flip-flop train and eval run its workflow",
}

# Hours-long configs, run on their quick counterparts: the same command otherwise.
QUICK = {"experiments/extrapolation-cpu.toml": "experiments/extrapolation-quick.toml"}

# The first word (after VAR=value assignments) of an unmarked block's first command, when the block is commands.
PROGRAMS = ("./build/", "build/", "bash", "sh", "routelab", "cmake", "ctest", "mpirun", "python3", "/usr/bin/python3",
            "pip", "cd", "git")

# A command that runs longer than this fails, asking for a quick config or a place in SKIPPED.
COMMAND_TIMEOUT_S = 240

# The table a `routelab verify --quick` of a page printed, so the sample check need not run it again.
VERIFY_OUTPUT = {}

PY = os.environ.get("PY", "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3")


def pages():
    """README.md and docs/*.md, relative to the repository's root."""
    return ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))


def commands(code):
    """The logical lines of a shell block: continuation lines joined, blanks and comment lines dropped."""
    out, line = [], ""
    for raw in code.splitlines():
        line += raw
        if line.endswith("\\"):
            line = line[:-1]
            continue
        if line.strip() and not line.strip().startswith("#"):
            out.append(line.strip())
        line = ""
    if line.strip():
        out.append(line.strip())
    return out


def program(command):
    """The command's first word after VAR=value assignments."""
    words = command.split()
    while words and "=" in words[0] and not words[0].startswith(("./", "/")):
        words = words[1:]
    return words[0] if words else ""


def is_command_block(lang, code):
    if lang in ("sh", "bash", "shell", "console"):
        return True
    if lang:
        return False
    cmds = commands(code)
    return bool(cmds) and program(cmds[0]).startswith(PROGRAMS)


def without_comment(command):
    """The command before a trailing `  # comment`."""
    at = command.find("  #")
    return command[:at].rstrip() if at >= 0 else command


def is_verify(command):
    words = command.split()
    return bool(words) and program(command).endswith("routelab") and words[1:2] == ["verify"]


def plan(page):
    """[(kind, heading, text)] of a page in order: kind "sh" (one command, quick config applied), "verify" (a
    `routelab verify` command, DocsVerify's), "python" (a block), "skip" (a command and why), "other" (a block that
    is no command, and its language)."""
    steps = []
    for lang, heading, code in doc_blocks(os.path.join(ROOT, page)):
        if lang == "python":
            steps.append(("python", heading, code))
        elif is_command_block(lang, code):
            for c in commands(code):
                bare = without_comment(c)
                if bare in SKIPPED:
                    steps.append(("skip", heading, f"{bare}: {SKIPPED[bare]}"))
                    continue
                for slow, quick in QUICK.items():
                    c = c.replace(slow, quick)
                steps.append(("verify" if is_verify(c) else "sh", heading, c))
        else:
            steps.append(("other", heading, lang or "unmarked"))
    return steps


def repository_copy(work, build):
    """The files git tracks (and new ones it does not ignore), as they are in the working tree, copied under
    `work`; build/ a link to the suite's build folder, data/ to the source's corpora when they are there."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    root = os.path.join(work, "clone")
    for rel in filter(None, listed):
        src = os.path.join(ROOT, rel)
        if not os.path.lexists(src) or os.path.isdir(src):
            continue
        dst = os.path.join(root, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(src, dst, follow_symlinks=False)
    os.symlink(build, os.path.join(root, "build"))
    if os.path.isdir(os.path.join(ROOT, "data")):
        os.symlink(os.path.join(ROOT, "data"), os.path.join(root, "data"))
    return root


def run_steps(steps, root, build, kinds=("sh", "python")):
    """Runs the page's steps of `kinds` in `root`: (None, log) or (what failed, log). A verify step's output goes
    to VERIFY_OUTPUT."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["HOME"] = os.path.join(os.path.dirname(root), "home")
    os.makedirs(env["HOME"], exist_ok=True)
    python_env = dict(env, PYTHONPATH=os.path.join(build, "python"))
    log = []
    for kind, heading, text in steps:
        if kind not in kinds:
            continue
        argv = [PY, "-c", text] if kind == "python" else ["bash", "-e", "-o", "pipefail", "-c", text]
        t0 = time.perf_counter()
        try:
            r = subprocess.run(argv, cwd=root, env=python_env if kind == "python" else env, capture_output=True,
                               text=True, timeout=COMMAND_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return (f"[{heading}] {text}: still running after {COMMAND_TIMEOUT_S} s; give it a quick config (QUICK) or "
                    "a reason to skip it (SKIPPED)"), "\n".join(log)
        log.append(f"{time.perf_counter() - t0:6.1f} s  {'(python block)' if kind == 'python' else text}")
        if r.returncode != 0:
            tail = (r.stdout + r.stderr)[-3000:]
            return f"[{heading}] {text}\nexit status {r.returncode}:\n{tail}", "\n".join(log)
        if kind == "verify" and "--quick" in text.split():
            VERIFY_OUTPUT["quick"] = r.stdout
    return None, "\n".join(log)


def table_key(line):
    """A `routelab verify` table row's check, result, quantity and parameters (its words before the estimate): the
    last five words are estimate, interval ("-" or two words), theory, kind and verdict."""
    words = line.split()
    tail = 6 if len(words) >= 6 and words[-4].endswith("]") else 5
    return tuple(words[:-tail])


class DocsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if BUILD is None:
            raise unittest.SkipTest("--build names no build folder")
        for corpus in ("brown", "gcide"):  # the pages fetch both; a missing one would be fetched from the network
            if not os.path.isdir(os.path.join(ROOT, "data", corpus)):
                raise unittest.SkipTest(f"data/{corpus} is missing: bash scripts/fetch-corpus.sh {corpus} "
                                        "(scripts/test.sh fetches both)")
        if shutil.which("git") is None or not os.path.exists(os.path.join(ROOT, ".git")):
            raise unittest.SkipTest("not a git checkout: the copy is made from git's list of files")

    def run_pages(self, kinds):
        """Runs the steps of `kinds` of every page in a fresh copy of the repository each; the number run."""
        ran = 0
        for page in pages():
            if page in OTHER_TESTS:
                continue
            steps = plan(page)
            runnable = [s for s in steps if s[0] in kinds]
            if not runnable:
                continue
            work = tempfile.mkdtemp(prefix="routelab_docs_commands_")
            t0 = time.perf_counter()
            try:
                failed, log = run_steps(steps, repository_copy(work, BUILD), BUILD, kinds)
            finally:
                shutil.rmtree(work, ignore_errors=True)
            self.assertIsNone(failed, f"{page}: {failed}\n(ran before it:\n{log})")
            ran += len(runnable)
            print(f"test_docs_commands: {page}: {len(runnable)} commands and blocks in "
                  f"{time.perf_counter() - t0:.1f} s\n{log}", flush=True)
            for kind, heading, text in steps:
                if kind == "skip" and "sh" in kinds:
                    print(f"  skipped [{heading}] {text}", flush=True)
        return ran


class DocsCommands(DocsTest):
    def test_every_command_of_every_page(self):
        # The pages hold at least the README's simulations and training blocks, training.md's and export.md's.
        self.assertGreaterEqual(self.run_pages(("sh", "python")), 20)

    def test_skips_and_quick_configs_name_documented_commands(self):
        # An entry whose command left the pages would skip nothing: it goes.
        documented = [text for page in pages() for kind, _, text in plan(page) if kind == "skip"]
        for command in SKIPPED:
            self.assertTrue(any(t.startswith(command + ":") for t in documented), f"{command} is no longer documented")
        blocks = "".join(code for page in pages() for _, _, code in doc_blocks(os.path.join(ROOT, page)))
        for slow in QUICK:
            self.assertIn(slow, blocks)

    def test_a_failing_command_fails(self):
        work = tempfile.mkdtemp(prefix="routelab_docs_commands_")
        try:
            os.makedirs(os.path.join(work, "clone"))
            os.symlink(BUILD, os.path.join(work, "clone", "build"))
            failed, _ = run_steps([("sh", "planted", "./build/routelab train --config no-such.toml")],
                                  os.path.join(work, "clone"), BUILD)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        self.assertIsNotNone(failed)
        self.assertIn("exit status 2", failed)
        self.assertEqual(table_key("a b  Example 2  beta  d=8  0.75  [0.7, 0.8]  0.75 exact  pass"),
                         ("a", "b", "Example", "2", "beta", "d=8"))
        self.assertEqual(table_key("so2 decay  B.2  mixing_window  a=1 eps=0.01  27  -  27 exact  pass"),
                         ("so2", "decay", "B.2", "mixing_window", "a=1", "eps=0.01"))


class DocsVerify(DocsTest):
    def test_verify_commands_and_samples(self):
        self.assertGreaterEqual(self.run_pages(("verify",)), 1)
        self.assertIn("quick", VERIFY_OUTPUT, "no page runs `routelab verify --quick`")
        samples = []
        for page in pages():
            for lang, heading, code in doc_blocks(os.path.join(ROOT, page)):
                lines = code.splitlines()
                if lines and lines[0].split()[:4] == ["check", "result", "quantity", "parameters"]:
                    samples.append((page, lines))
        self.assertGreaterEqual(len(samples), 1)
        printed = VERIFY_OUTPUT["quick"].splitlines()
        keys = {table_key(line) for line in printed[1:-1]}
        for page, lines in samples:
            self.assertEqual(lines[0].split(), printed[0].split(), f"{page}: the sample's columns")
            for line in lines[1:]:
                self.assertIn(table_key(line), keys, f"{page}: `routelab verify --quick` prints no row {line!r}")


if __name__ == "__main__":
    unittest.main()
