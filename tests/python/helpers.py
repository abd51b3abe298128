"""What the Python tests share: a small corpus folder from tests/data/brown-slice, a tiny run configuration,
and `routelab` the program, run as the tests' reference."""
import hashlib
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SLICE = os.path.join(ROOT, "tests", "data", "brown-slice")


def make_corpus(work, val_bytes):
    """A corpus folder as routelab reads it: the slice's train.txt, its val.txt cut to val_bytes, SHA256SUMS."""
    d = os.path.join(work, "corpus")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(SLICE, "train.txt"), "rb") as f:
        train = f.read()
    with open(os.path.join(SLICE, "val.txt"), "rb") as f:
        val = f.read()[:val_bytes]
    sums = ""
    for name, data in (("train.txt", train), ("val.txt", val)):
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
        sums += f"{hashlib.sha256(data).hexdigest()}  {name}\n"
    with open(os.path.join(d, "SHA256SUMS"), "w") as f:
        f.write(sums)
    return d


def tiny_config(scheme, extra, corpus, steps=400):
    """TOML of a tiny model. d_model 24 with 3 heads: ALiBi's slopes for a head count that is not a power of two;
    2 layers: the layer index of random angles and of the tensor names."""
    return (f'[model]\nd_model = 24\nheads = 3\nlayers = 2\nmlp_ratio = 2\ncontext = 16\nscheme = "{scheme}"\n'
            f"{extra}[train]\nbatch = 4\nwarmup = 2\nsteps = {steps}\nlr = 3e-3\ncheckpoint_every = {steps}\n"
            f'log_every = 100\n[data]\ncorpus = "{corpus}"\n')


def run_cli(binary, *args, check=True):
    """routelab ARGS: (status, stdout, stderr); with check, a failure stops the test program."""
    r = subprocess.run([binary, *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise SystemExit(f"routelab {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")
    return r.returncode, r.stdout, r.stderr


def unittest_main_with_binary(name):
    """unittest.main() for a test file run as `TEST.py --routelab BUILD/routelab`: returns after setting
    that file's ROUTELAB; stops unless the compiled module imported."""
    import sys
    import unittest

    import routelab
    module = sys.modules["__main__"]
    if "--routelab" in sys.argv:
        i = sys.argv.index("--routelab")
        module.ROUTELAB = sys.argv[i + 1]
        del sys.argv[i:i + 2]
    if routelab._core is None:
        raise SystemExit(f"{name}: routelab's compiled module did not import: {routelab._import_error}")
    unittest.main()


def build_folder():
    """The `--build DIR` argument (the suite's CMake build folder), removed from sys.argv; None without one."""
    import sys
    if "--build" not in sys.argv:
        return None
    i = sys.argv.index("--build")
    folder = sys.argv[i + 1]
    del sys.argv[i:i + 2]
    return os.path.abspath(folder)


def doc_blocks(path):
    """[(language, the ## or ### heading above it, code)] of every fenced block of a markdown file, in order."""
    blocks, heading, lang, code = [], "", None, []
    with open(path) as f:
        for line in f:
            if lang is None and line.startswith("#"):
                heading = line.strip("# \n")
            elif lang is None and line.startswith("```"):
                lang, code = line[3:].strip(), []
            elif lang is not None and line.startswith("```"):
                blocks.append((lang, heading, "".join(code)))
                lang = None
            elif lang is not None:
                code.append(line)
    return blocks


def repository_copy(work, build):
    """A folder that stands for the repository's root as a shell block of the docs sees it, without writing into
    the clone: what pip reads (pyproject.toml, setup.py, README.md, lib/base/version.h, python/routelab) copied,
    and build/ a link to the suite's build folder. Returns its path."""
    import shutil
    root = os.path.join(work, "repository")
    os.makedirs(os.path.join(root, "lib", "base"))
    for name in ("pyproject.toml", "setup.py", "README.md", os.path.join("lib", "base", "version.h")):
        shutil.copy(os.path.join(ROOT, name), os.path.join(root, name))
    shutil.copytree(os.path.join(ROOT, "python", "routelab"), os.path.join(root, "python", "routelab"),
                    ignore=shutil.ignore_patterns("__pycache__", "_routelab*.so"))
    os.symlink(build, os.path.join(root, "build"))
    return root


def run_shell_blocks(blocks, work, build):
    """Each shell block with bash -e from a repository_copy, HOME a fresh folder under `work` (so ~ is there)
    and no PYTHONPATH (what a user's shell has): (status, output) of the first that fails, or (0, all output)."""
    import subprocess
    root = repository_copy(work, build)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["HOME"] = os.path.join(work, "home")
    os.makedirs(env["HOME"], exist_ok=True)
    out = ""
    for code in blocks:
        r = subprocess.run(["bash", "-e", "-c", code], cwd=root, env=env, capture_output=True, text=True)
        out += f"$ {code}{r.stdout}{r.stderr}"
        if r.returncode != 0:
            return r.returncode, out
    return 0, out
