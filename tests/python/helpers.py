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
