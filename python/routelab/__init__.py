"""routelab from Python: the C++ library's simulations, step laws and trained runs (routelab._routelab, built
by pybind11 from the same CMake build), and routelab.torch, attention modules for every scheme in pure PyTorch.

  import routelab
  cols = routelab.sim("spectral-gap", family="householder", d=[2, 3, 5], samples=100000)  # {column: array}
  law = routelab.step_law("so2", d=4, a=1.0); law.gap, law.mean, law.products([1, 8], samples=1000)
  run = routelab.train({"model": {...}, "train": {...}, "data": {...}}, out="runs/q")
  run.eval("1x,4x")["lengths"]["bits_per_byte"]; run.probe("1x"); run.export("q.safetensors")

docs/python.md walks through it. routelab.torch needs only PyTorch: it imports without the compiled module.
"""
import json as _json
import os as _os

try:
    from . import _routelab as _core
except ImportError as _e:  # routelab.torch still works: it does not need the compiled half
    _core = None
    _import_error = _e

__all__ = ["sim", "sim_frame", "sims", "sim_help", "families", "family_flags", "step_law", "StepLaw",
           "mixing_window", "train", "load_run", "Run", "frame", "__version__"]


def _need_core():
    if _core is None:
        raise ImportError(f"routelab's compiled module is missing ({_import_error}); build with ROUTELAB_PYTHON=ON "
                          "and put build/python (or the installed dist-packages) on PYTHONPATH")
    return _core


def __getattr__(name):
    if name in ("families", "family_flags", "mixing_window", "sims", "sim_help", "StepLaw", "__version__",
                "git_revision"):
        return getattr(_need_core(), name)
    raise AttributeError(f"module 'routelab' has no attribute '{name}'")


def _scalar_text(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return v
    if hasattr(v, "is_integer") and not isinstance(v, int):  # floats, numpy floats: shortest round trip
        return repr(float(v))
    return str(int(v)) if hasattr(v, "__index__") else str(v)


def _flag_text(flag, v):
    """A keyword argument as the CLI would have it typed: lists (a sweep) comma-joined; for a list-valued flag
    (lambdas) a list of lists is a sweep joined with ';'."""
    if isinstance(v, (list, tuple)) or (hasattr(v, "ndim") and getattr(v, "ndim", 0) == 1):
        items = list(v)
        if items and isinstance(items[0], (list, tuple)):
            return ";".join(",".join(_scalar_text(x) for x in item) for item in items)
        return ",".join(_scalar_text(x) for x in items)
    return _scalar_text(v)


def _flags(kwargs):
    # Python names cannot hold '-': rope_base is --rope-base.
    return [(k.replace("_", "-"), _flag_text(k, v)) for k, v in kwargs.items() if v is not None]


def sim(name, *, progress=None, **flags):
    """Runs simulation `name` as `routelab sim NAME --flag value ...` does and returns its rows as
    {column: numpy array}: float64 for the measured values (estimate, stderr, ci_low, ci_high, theory: the
    doubles the simulation computed, handed over without a copy, the CSV's numbers bit for bit; empty cells
    are NaN), int64 for a flag's column that holds integers only, float64 for other numbers, str for text.

    Keyword arguments are the CLI's flags (rope_base for --rope-base); a list sweeps a flag as a comma list
    does; samples, seed, threads, out (a CSV file plus its FILE.json sidecar, written whole) and shard as in
    the CLI. The same seed gives the same numbers as the CLI at any thread count. Bad flags raise ValueError
    with the CLI's one-line message before any work, and nothing is written. progress(done, total) is called
    after each parameter point; Ctrl-C stops between points (KeyboardInterrupt).

    Every simulation and its flags:
    """
    return _need_core()._sim(name, _flags(flags), progress)


def frame(columns):
    """{column: array} (what sim and the run methods return) as a pandas DataFrame, in column order."""
    import pandas as pd
    return pd.DataFrame({k: columns[k] for k in columns})


def sim_frame(name, *, progress=None, **flags):
    """sim(...) as a pandas DataFrame."""
    return frame(sim(name, progress=progress, **flags))


def step_law(family, **flags):
    """One step law of the registry (`routelab families`): family name and its flags as keyword arguments
    (d=8, a=1.0, ...); the rest at their defaults. A StepLaw: gap, mean, second_moment, closed_forms,
    determinant, haar_limit, products(lengths, samples, seed), scores(n, samples, seed, q, k)."""
    return _need_core()._step_law(family, _flags(flags))


def _toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return _json.dumps(v)  # a TOML basic string
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, float) or (hasattr(v, "is_integer") and not isinstance(v, int)):
        return repr(float(v))
    return str(v)


def _toml_text(config, prefix=""):
    """A dict of tables ({"model": {...}, "train": {...}}) as TOML text."""
    lines, tables = [], []
    for k, v in config.items():
        if isinstance(v, dict):
            tables.append((k, v))
        else:
            lines.append(f"{k} = {_toml_value(v)}")
    text = "\n".join(lines) + ("\n" if lines else "")
    for k, v in tables:
        name = f"{prefix}.{k}" if prefix else k
        text += f"[{name}]\n" + _toml_text(v, name)
    return text


def train(config, out, *, resume=False, threads=0, progress=None):
    """Trains a run as `routelab train --config FILE --out OUT` does and returns it (a Run). `config` is a TOML
    path or a dict of its tables ({"model": {...}, "train": {...}, "data": {...}}), every key checked as in a
    file. progress(step, steps, loss) is called after every step; Ctrl-C stops training (KeyboardInterrupt),
    and the run keeps its last checkpoint (resume=True continues from it). threads: 0 for the cores other
    processes leave free (docs/training.md), N to fix them."""
    core = _need_core()
    if isinstance(config, dict):
        core._train(_toml_text(config), True, _os.fspath(out), resume, threads, progress)
    else:
        core._train(_os.fspath(config), False, _os.fspath(out), resume, threads, progress)
    return Run(out)


def load_run(path):
    """A trained run directory (config.toml and checkpoint.bin, as routelab train writes it)."""
    return Run(path)


class Run:
    """A trained run: its configuration (a dict of [model], [train], [data]), the checkpoint's step and
    parameters (the flat float32 buffer), and the commands that read it."""

    def __init__(self, path):
        self.path = _os.fspath(path)
        info = _need_core()._run_info(self.path)
        self.config, self.step, self.params = info["config"], info["step"], info["params"]

    @property
    def scheme(self):
        return self.config["model"]["scheme"]

    def __repr__(self):
        return f"routelab.Run({self.path!r}, scheme={self.scheme!r}, step={self.step})"

    def eval(self, lengths="1x,2x,4x,8x,16x,32x,64x", *, losses=False, threads=0, progress=None):
        """Bits per byte at each length as `routelab eval` computes them, without writing files: {"lengths":
        columns eval_len, windows, tokens, bits_per_byte, ppl; "positions": the position bins; with losses=True
        "losses": {L: array (windows, L) of every position's loss in nats}}. progress(done, total) after each
        length; Ctrl-C stops it after any forward pass (KeyboardInterrupt)."""
        return _need_core()._evaluate(self.path, _flag_text("lengths", lengths), losses, threads, progress)

    def probe(self, lengths="1x,2x,4x,8x,16x,32x,64x", *, window=0, max_windows=4, eps=0.05, csv=None, threads=0,
              progress=None):
        """`routelab probe`: {"rows": far mass and Proposition 3's bound per layer, head and length; "angles":
        each block's beta and mixing window; "phases": cross-block phase statistics}. Writes its CSVs as the
        CLI does (csv, default RUN/probe.csv, and its -angles, -phases and .json companions). progress(done,
        total) after each length and after the phase statistics; Ctrl-C stops it after any forward pass
        (KeyboardInterrupt), and then no file is written."""
        csv = csv or _os.path.join(self.path, "probe.csv")
        return _need_core()._probe([self.path], _flag_text("lengths", lengths), window, max_windows, eps,
                                   _os.fspath(csv), threads, progress)

    def passkey(self, lengths="1x,2x,4x,8x,16x,32x,64x", *, depths=(0, 0.25, 0.5, 0.75, 1), trials=20, seed=1,
                out=None, threads=0, progress=None):
        """`routelab passkey`: retrieval accuracy per length and depth (columns as its CSV; written to out,
        default RUN/passkey.csv). progress(done, total) after each length and depth; Ctrl-C stops it after any
        forward pass (KeyboardInterrupt), and then no file is written."""
        out = out or _os.path.join(self.path, "passkey.csv")
        return _need_core()._passkey(self.path, _flag_text("lengths", lengths), [float(d) for d in depths], trials,
                                     seed, _os.fspath(out), threads, progress)

    def export(self, out):
        """`routelab export`: the weights as a .safetensors file (docs/export.md), which
        routelab.torch.from_safetensors loads."""
        _need_core()._export(self.path, _os.fspath(out))
        return _os.fspath(out)


def _document_sims():
    if _core is None:
        return
    sim.__doc__ += "".join("\n    " + _core.sim_help(s["name"]).replace("\n", "\n    ") for s in _core.sims())


_document_sims()
