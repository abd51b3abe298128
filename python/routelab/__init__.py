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
import numbers as _numbers
import os as _os
import re as _re

try:
    from . import _routelab as _core
except ImportError as _e:  # routelab.torch still works: it does not need the compiled half
    _core = None
    _import_error = _e

__all__ = ["sim", "sim_frame", "sims", "sim_help", "families", "family_flags", "step_law", "StepLaw",
           "mixing_window", "train", "load_run", "Run", "task_sets", "frame", "git_revision", "__version__"]
_FROM_CORE = ("families", "family_flags", "mixing_window", "sims", "sim_help", "__version__", "git_revision")


def _need_core():
    if _core is None:
        raise ImportError(f"routelab's compiled module is missing ({_import_error}); build with ROUTELAB_PYTHON=ON "
                          "and put build/python (or the installed dist-packages) on PYTHONPATH, or pip install it "
                          "(docs/python.md)")
    return _core


def __getattr__(name):
    if name in _FROM_CORE:
        return getattr(_need_core(), name)
    if name == "torch":  # routelab.torch without its own import line
        import importlib
        return importlib.import_module(".torch", __name__)
    raise AttributeError(f"module 'routelab' has no attribute '{name}'")


def __dir__():
    """Every public name, those the compiled module lends included, and the routelab.torch subpackage."""
    return sorted(set(globals()) | set(__all__) | {"torch"})


# ---- keyword arguments as the CLI's flag text, and the CLI's refusals in Python's words ----

# Flags that are switches: in Python they are True or False.
_SWITCHES = {"resume", "losses", "update", "new", "finished", "quiet", "progress"}


def _python_words(message, given=None, names=None):
    """A refusal of the library, which names the CLI's flags (--rope-base, --resume), in Python's words: the
    keyword (rope_base=, resume=True; `names` maps a flag to another argument, sim's --sim to name=); a message
    that opens with a flag opens with what was passed for it (d=4.0: ...)."""
    given, names = given or {}, names or {}

    def python_name(flag):
        return names.get(flag, flag.replace("-", "_"))

    def keyword(m):
        name = python_name(m.group(1))
        return f"{name}=True" if name in _SWITCHES else f"{name}="
    head = _re.match(r"--([a-z][a-z0-9-]*): ", message)
    if head and python_name(head.group(1)) in given:
        name = python_name(head.group(1))
        message = f"{name}={given[name]!r}: " + message[head.end():]
    for flag in set(_re.findall(r"--([a-z][a-z0-9-]*) ", message)):  # "--out DIR": what was passed, as passed
        name = python_name(flag)
        if name in given and isinstance(given[name], (str, _os.PathLike)):
            message = message.replace(f"--{flag} {_os.fspath(given[name])}", f"{name}={given[name]!r}")
    return _re.sub(r"(?<![\w-])--([a-z][a-z0-9-]*)", keyword, message)


class _PythonWords:
    """with _PythonWords(kwargs): the library's ValueError raised again in Python's words (_python_words)."""

    def __init__(self, given=None, names=None):
        self.given, self.names = given, names

    def __enter__(self):
        return self

    def __exit__(self, kind, error, tb):
        if kind is ValueError:
            raise ValueError(_python_words(str(error), self.given, self.names)) from None
        return False


def _scalar_text(key, v):
    """One value as the CLI reads it: bools as true/false, integers (numpy's too) in decimal, other reals in their
    shortest round-trip text, strings and paths as they are."""
    if isinstance(v, bool) or type(v).__name__ == "bool_":
        return "true" if v else "false"
    if isinstance(v, str):
        return v
    if isinstance(v, _os.PathLike):
        return _os.fspath(v)
    if isinstance(v, _numbers.Integral):
        return str(int(v))
    if isinstance(v, _numbers.Real):
        return repr(float(v))
    if getattr(v, "ndim", None) == 0 and hasattr(v, "item"):  # a 0-d array
        return _scalar_text(key, v.item())
    raise TypeError(f"{key}={v!r}: a number, a string or a bool (a list of them sweeps), not {type(v).__name__}")


def _is_list(v):
    """A list, tuple, range, 1-d array or pandas Series/Index: values in order."""
    return isinstance(v, (list, tuple, range)) or (getattr(v, "ndim", None) == 1 and hasattr(v, "__iter__"))


def _list_valued():
    """The flags whose one value is a list (--lambdas); a list of lists sweeps them."""
    core = _need_core()
    flags = core.family_flags() + [f for s in core.sims() for f in s["flags"]]
    return {f["name"] for f in flags if f["list_valued"]}


def _flag_text(key, v, list_valued=False):
    """A keyword argument as the CLI would have it typed: a list sweeps (comma-joined); a list-valued flag takes
    one list, and a list of lists sweeps it (';'-joined). None, sets, dicts, lists of lists elsewhere and
    arrays of more than one axis are refused (TypeError) before any work."""
    if v is None:
        raise TypeError(f"{key}=None: give a value, or leave {key} out for its default")
    if isinstance(v, (set, frozenset, dict)):
        raise TypeError(f"{key}={v!r}: a {type(v).__name__} is not accepted; a value, or a list of values to sweep")
    if getattr(v, "ndim", 0) > 1:
        raise TypeError(f"{key}: an array of {v.ndim} axes is not accepted; a value, or a list of values to sweep")
    if not _is_list(v):
        return _scalar_text(key, v)
    items = list(v)
    if not items:
        raise ValueError(f"{key}=[]: an empty list sweeps nothing; give at least one value")
    nested = [_is_list(x) for x in items]
    if any(nested):
        if not list_valued or not all(nested):
            raise TypeError(f"{key}={v!r}: a list of lists is not accepted here; "
                            + ("a list of lists (one list per point) sweeps it" if list_valued else
                               "a value, or a list of values to sweep"))
        return ";".join(",".join(_scalar_text(key, x) for x in item) for item in items)
    return ",".join(_scalar_text(key, x) for x in items)


def _flags(kwargs):
    # Python names cannot hold '-': rope_base is --rope-base.
    lists = _list_valued()
    return [(k.replace("_", "-"), _flag_text(k, v, k in lists)) for k, v in kwargs.items()]


def _int_arg(key, v, lo=None, hi=2**63 - 1):
    """An integer argument (numpy's too), or a TypeError naming the keyword. Beyond 64 bits (hi: int64's largest
    unless a seed's uint64) it is refused here in one line, as the library would refuse it, rather than by the
    conversion to C++; the library checks the range each argument takes."""
    if isinstance(v, bool) or not isinstance(v, _numbers.Integral):
        raise TypeError(f"{key}={v!r}: an integer, not {type(v).__name__}")
    v = int(v)
    if lo is not None and v < lo:
        raise ValueError(f"{key}={v}: at least {lo}")
    if v < -2**63 or v > hi:
        raise ValueError(f"{key}={v}: not accepted; at most {hi}")
    return v


def _real_arg(key, v):
    if isinstance(v, bool) or not isinstance(v, _numbers.Real):
        raise TypeError(f"{key}={v!r}: a number, not {type(v).__name__}")
    return float(v)


def _bool_arg(key, v):
    if not (isinstance(v, bool) or type(v).__name__ == "bool_"):
        raise TypeError(f"{key}={v!r}: True or False, not {type(v).__name__}")
    return bool(v)


def _path_arg(key, v):
    if not isinstance(v, (str, _os.PathLike)):
        raise TypeError(f"{key}={v!r}: a path (str or os.PathLike), not {type(v).__name__}")
    return _os.fspath(v)


def _int_list(key, v):
    if not _is_list(v):
        raise TypeError(f"{key}={v!r}: a list of integers, not {type(v).__name__}")
    return [_int_arg(key, x) for x in v]


def _real_list(key, v):
    if not _is_list(v):
        raise TypeError(f"{key}={v!r}: a list of numbers, not {type(v).__name__}")
    return [_real_arg(key, x) for x in v]


def _callable_arg(key, v):
    if v is not None and not callable(v):
        raise TypeError(f"{key}={v!r}: a function (or None), not {type(v).__name__}")
    return v


def sim(name, *, progress=None, **flags):
    """Runs simulation `name` as `routelab sim NAME --flag value ...` does and returns its rows as
    {column: numpy array}: float64 for the measured values (estimate, stderr, ci_low, ci_high, theory: the
    doubles the simulation computed, handed over without a copy, the CSV's numbers bit for bit; empty cells
    are NaN), int64 for a flag's column that holds integers only, float64 for other numbers, str for text.

    Keyword arguments are the CLI's flags (rope_base for --rope-base): numbers (numpy's too), strings, bools;
    a list (or a 1-d array, a pandas Series) sweeps a flag as a comma list does, and for a list-valued flag
    (lambdas) a list of lists does; samples, seed, threads, out (a CSV file plus its FILE.json sidecar, written
    whole) and shard as in the CLI. The same seed gives the same numbers as the CLI at any thread count. Bad
    flags raise ValueError with the CLI's one line in Python's words (the keyword, not the flag) before any
    work, and nothing is written; None, sets and lists of lists elsewhere raise TypeError. progress(done,
    total) is called after each parameter point; Ctrl-C stops between points (KeyboardInterrupt).

    Every simulation and its flags:
    """
    if not isinstance(name, str):
        raise TypeError(f"name={name!r}: a simulation's name (routelab.sims()), not {type(name).__name__}")
    args = _flags(flags)
    with _PythonWords({**flags, "name": name}, {"sim": "name"}):
        return _need_core()._sim(name, args, _callable_arg("progress", progress))


def frame(columns):
    """{column: array} (what sim and the run methods return) as a pandas DataFrame, in column order."""
    import pandas as pd
    return pd.DataFrame({k: columns[k] for k in columns})


def sim_frame(name, *, progress=None, **flags):
    """sim(...) as a pandas DataFrame."""
    return frame(sim(name, progress=progress, **flags))


class StepLaw:
    """One step law of the registry at one parameter point (routelab.step_law): family, d, params, determinant,
    haar_limit, closed_forms, gap, mean, second_moment (the compiled StepLaw's), products() and scores()."""

    def __init__(self, law):
        self._law = law

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._law, name)

    def __dir__(self):
        return sorted(set(dir(type(self))) | {n for n in dir(self._law) if not n.startswith("_")})

    def __repr__(self):
        return f"routelab.StepLaw(family={self.family!r}, d={self.d}, params={self.params})"

    def products(self, lengths, samples, seed=1, threads=0):
        """P_n = M_n ... M_1 at each walk length n of `lengths` (ascending), for `samples` walks: an array
        (samples, len(lengths), d, d). Walk i reads Philox stream i of `seed` (a simulation's point 0), so the
        numbers do not depend on `threads` (0: all cores)."""
        args = (_int_list("lengths", lengths), _int_arg("samples", samples), _int_arg("seed", seed, 0, 2**64 - 1),
                _int_arg("threads", threads))
        with _PythonWords({"lengths": lengths, "samples": samples, "threads": threads}):
            return self._law.products(*args)

    def scores(self, n, samples, seed=1, q=None, k=None, threads=0):
        """Scores q^T P_t k for t = 1..n of `samples` walks (q = k = e_1 unless given): an array (samples, n);
        walk i reads stream i of `seed`."""
        args = (_int_arg("n", n), _int_arg("samples", samples), _int_arg("seed", seed, 0, 2**64 - 1),
                None if q is None else _real_list("q", q), None if k is None else _real_list("k", k),
                _int_arg("threads", threads))
        with _PythonWords({"n": n, "samples": samples, "threads": threads}):
            return self._law.scores(*args)


def step_law(family, **flags):
    """One step law of the registry (`routelab families`): family name and its flags as keyword arguments
    (d=8, a=1.0, ...); the rest at their defaults. A StepLaw: gap, mean, second_moment, closed_forms,
    determinant, haar_limit, products(lengths, samples, seed), scores(n, samples, seed, q, k)."""
    if not isinstance(family, str):
        raise TypeError(f"family={family!r}: a family's name (routelab.families()), not {type(family).__name__}")
    lists = _list_valued()
    for k, v in flags.items():
        if _is_list(v) and k not in lists:
            raise TypeError(f"{k}={v!r}: one step law takes one value per flag (routelab.sim sweeps lists)")
    args = [(k.replace("_", "-"), _flag_text(k, v)) for k, v in flags.items()]  # a list-valued flag's one list
    with _PythonWords(flags):
        return StepLaw(_need_core()._step_law(family, args))


def _toml_value(key, v):
    if isinstance(v, bool) or type(v).__name__ == "bool_":
        return "true" if v else "false"
    if isinstance(v, str):
        return _json.dumps(v)  # a TOML basic string
    if isinstance(v, _os.PathLike):
        return _json.dumps(_os.fspath(v))
    if _is_list(v):
        return "[" + ", ".join(_toml_value(key, x) for x in v) + "]"
    if isinstance(v, _numbers.Integral):
        return str(int(v))
    if isinstance(v, _numbers.Real):
        return repr(float(v))
    raise TypeError(f"config {key} = {v!r}: a number, a string, a bool or a list of them, not {type(v).__name__}")


def _toml_text(config, prefix=""):
    """A dict of tables ({"model": {...}, "train": {...}}) as TOML text."""
    lines, tables = [], []
    for k, v in config.items():
        if not isinstance(k, str):
            raise TypeError(f"config key {k!r}: a string")
        name = f"{prefix}.{k}" if prefix else k
        if isinstance(v, dict):
            tables.append((name, v))
        else:
            lines.append(f"{k} = {_toml_value(f'[{prefix}] {k}' if prefix else k, v)}")
    text = "\n".join(lines) + ("\n" if lines else "")
    for name, v in tables:
        text += f"[{name}]\n" + _toml_text(v, name)
    return text


def train(config, out, *, resume=False, threads=0, progress=None):
    """Trains a run as `routelab train --config FILE --out OUT` does and returns it (a Run). `config` is a TOML
    path or a dict of its tables ({"model": {...}, "train": {...}, "data": {...}}), every key checked as in a
    file; numbers may be numpy's. A relative corpus path is read from the working directory (os.getcwd()), and
    a corpus that is not there is named by its absolute path. progress(step, steps, loss) is called after
    every step; Ctrl-C stops training (KeyboardInterrupt), and the run keeps its last checkpoint
    (resume=True continues from it). threads: 0 for the cores other processes leave free (docs/training.md),
    N to fix them."""
    core = _need_core()
    given = {"out": out, "resume": resume, "threads": threads}
    args = (_path_arg("out", out), _bool_arg("resume", resume), _int_arg("threads", threads),
            _callable_arg("progress", progress))
    if isinstance(config, dict):
        text = _toml_text(config)
        with _PythonWords(given):
            core._train(text, True, *args)
    else:
        path = _path_arg("config", config)
        with _PythonWords(given):
            core._train(path, False, *args)
    return Run(out)


def load_run(path):
    """A trained run directory (config.toml and checkpoint.bin, as routelab train writes it)."""
    return Run(path)


def _task_args(lengths, p, distances, reads, distance_reads, seed):
    return (_lengths_text(lengths), _real_list("p", p), _int_list("distances", distances),
            _int_arg("reads", reads, 1), _int_arg("distance_reads", distance_reads, 1), _int_arg("seed", seed, 0))


def task_sets(model, lengths="1x,2x,4x,8x,16x", *, p=(), distances=(), reads=2000, distance_reads=500, seed=1):
    """The evaluation sets of the task a model was trained on (Run.task_sets), from its run folder or from the
    FILE.safetensors `routelab export` wrote (the committed task models under paper-figures/tasks-cpu/models/
    carry their configuration), so an exported model can be scored again without its run."""
    args = _task_args(lengths, p, distances, reads, distance_reads, seed)
    with _PythonWords({"model": model, "lengths": lengths, "p": p, "distances": distances, "reads": reads,
                       "distance_reads": distance_reads, "seed": seed}):
        return _need_core()._task_sets(_path_arg("model", model), *args)


def _lengths_text(lengths):
    """"1x,4x,128", or a list of lengths ("4x", 128) as that text."""
    return _flag_text("lengths", lengths)


class Run:
    """A trained run: its configuration (a dict of [model], [train], [data]), the checkpoint's step and
    parameters (the flat float32 buffer), and the commands that read it."""

    def __init__(self, path):
        self.path = _path_arg("path", path)
        with _PythonWords():
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
        args = (_lengths_text(lengths), _bool_arg("losses", losses), _int_arg("threads", threads),
                _callable_arg("progress", progress))
        with _PythonWords({"lengths": lengths, "threads": threads}):
            return _need_core()._evaluate(self.path, *args)

    def probe(self, lengths="1x,2x,4x,8x,16x,32x,64x", *, window=0, max_windows=4, eps=0.05, csv=None, threads=0,
              progress=None):
        """`routelab probe`: {"rows": far mass and Proposition 3's bound per layer, head and length; "angles":
        each block's beta and mixing window; "phases": cross-block phase statistics}. Writes its CSVs as the
        CLI does (csv, default RUN/probe.csv, and its -angles, -phases and .json companions). progress(done,
        total) after each length and after the phase statistics; Ctrl-C stops it after any forward pass
        (KeyboardInterrupt), and then no file is written."""
        csv = _os.path.join(self.path, "probe.csv") if csv is None else _path_arg("csv", csv)
        args = (_lengths_text(lengths), _int_arg("window", window), _int_arg("max_windows", max_windows),
                _real_arg("eps", eps), csv, _int_arg("threads", threads), _callable_arg("progress", progress))
        with _PythonWords({"lengths": lengths, "window": window, "max_windows": max_windows, "eps": eps,
                           "threads": threads}):
            return _need_core()._probe([self.path], *args)

    def passkey(self, lengths="1x,2x,4x,8x,16x,32x,64x", *, depths=(0, 0.25, 0.5, 0.75, 1), trials=20, seed=1,
                out=None, threads=0, progress=None):
        """`routelab passkey`: retrieval accuracy per length and depth (columns as its CSV; written to out,
        default RUN/passkey.csv). progress(done, total) after each length and depth; Ctrl-C stops it after any
        forward pass (KeyboardInterrupt), and then no file is written."""
        out = _os.path.join(self.path, "passkey.csv") if out is None else _path_arg("out", out)
        args = (_lengths_text(lengths), _real_list("depths", depths), _int_arg("trials", trials),
                _int_arg("seed", seed, 0, 2**64 - 1), out, _int_arg("threads", threads), _callable_arg("progress", progress))
        with _PythonWords({"lengths": lengths, "depths": depths, "trials": trials, "seed": seed, "threads": threads}):
            return _need_core()._passkey(self.path, *args)

    @property
    def task(self):
        """The task the run trained on ("flipflop", "latest_value"), or "" for a corpus."""
        return self.config["data"].get("task", "")

    def _task_args(self, lengths, p, distances, reads, distance_reads, seed):
        return _task_args(lengths, p, distances, reads, distance_reads, seed)

    def task_eval(self, lengths="1x,2x,4x,8x,16x", *, p=(), distances=(), reads=2000, distance_reads=500, seed=1,
                  out=None):
        """`routelab eval` of a run trained on a task (docs/tasks.md): the read error of each generated set
        (the law at each length, flip-flop's further p, the distance sets), columns as its CSV, which is written
        to out (default RUN/eval.csv) with its sidecar."""
        out = _os.path.join(self.path, "eval.csv") if out is None else _path_arg("out", out)
        args = self._task_args(lengths, p, distances, reads, distance_reads, seed)
        with _PythonWords({"lengths": lengths, "p": p, "distances": distances, "reads": reads,
                           "distance_reads": distance_reads, "seed": seed, "out": out}):
            return _need_core()._task_eval(self.path, *args, out)

    def task_sets(self, lengths="1x,2x,4x,8x,16x", *, p=(), distances=(), reads=2000, distance_reads=500, seed=1):
        """The sets task_eval scores, as a list of dicts: name, set ("length" or "distance"), task, p, eval_len,
        distance, sequences; "bytes", a uint8 array (sequences, eval_len + 1) whose row is one sequence (the start
        byte first: position t predicts byte t + 1); "reads", an int64 array of rows (sequence, position,
        distance) whose answer is bytes[sequence, position + 1]; "batch" and "first_pass", task_eval's forward
        passes (batch sequences each, pass i with pass id first_pass + i: the random angles). A PyTorch model scored
        on them in those passes (routelab.torch.task_errors) gives task_eval's errors."""
        return task_sets(self.path, lengths, p=p, distances=distances, reads=reads, distance_reads=distance_reads,
                         seed=seed)

    def export(self, out):
        """`routelab export`: the weights as a .safetensors file (docs/export.md), which
        routelab.torch.from_safetensors loads."""
        path = _path_arg("out", out)
        with _PythonWords({"out": out}):
            _need_core()._export(self.path, path)
        return path


def _document_sims():
    if _core is None:
        return
    sim.__doc__ += "".join("\n    " + _core.sim_help(s["name"]).replace("\n", "\n    ") for s in _core.sims())


_document_sims()
