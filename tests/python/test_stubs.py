"""The type stubs against what they describe (issue 37): every name the compiled module defines is in
routelab/_routelab.pyi and every name of routelab.__all__ in routelab/__init__.pyi, with the same parameters
(names, kinds, defaults), and neither stub names anything that is not there, so the stubs cannot drift.

  PYTHONPATH=build/python /usr/bin/python3 tests/python/test_stubs.py
"""
import ast
import inspect
import os
import unittest

import routelab
from helpers import unittest_main_with_binary


def stub_tree(name):
    """The stub beside the imported package (what an installed package ships too)."""
    path = os.path.join(os.path.dirname(routelab.__file__), name)
    with open(path) as f:
        return ast.parse(f.read(), path)


def stub_names(body):
    """{name: its node} of a stub's module or class body: functions, classes, annotated names and `import x as
    x` re-exports; private aliases (_Columns) are the stub's own."""
    out = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = node
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                if a.asname == a.name:
                    out[a.name] = node
    return out


def is_property(node):
    return isinstance(node, ast.FunctionDef) and any(
        isinstance(d, ast.Name) and d.id == "property" for d in node.decorator_list)


def stub_parameters(fn):
    """[(name, kind, default)] of a stub's def, kinds as inspect names them, default the literal or None
    (inspect.Parameter.empty where there is none)."""
    a = fn.args
    empty = inspect.Parameter.empty
    positional = a.posonlyargs + a.args
    defaults = [empty] * (len(positional) - len(a.defaults)) + [ast.literal_eval(d) for d in a.defaults]
    out = [(p.arg, inspect.Parameter.POSITIONAL_ONLY if i < len(a.posonlyargs) else
            inspect.Parameter.POSITIONAL_OR_KEYWORD, defaults[i]) for i, p in enumerate(positional)]
    if a.vararg:
        out.append((a.vararg.arg, inspect.Parameter.VAR_POSITIONAL, empty))
    for p, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append((p.arg, inspect.Parameter.KEYWORD_ONLY, empty if d is None else ast.literal_eval(d)))
    if a.kwarg:
        out.append((a.kwarg.arg, inspect.Parameter.VAR_KEYWORD, empty))
    return out


def split_top_level(text):
    """'a: List[Tuple[str, str]], b: int = 1' -> ['a: List[Tuple[str, str]]', 'b: int = 1']."""
    parts, depth, cur = [], 0, ""
    for c in text:
        depth += c in "[(" and 1 or 0
        depth -= c in "])" and 1 or 0
        if c == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += c
    if cur.strip():
        parts.append(cur.strip())
    return parts


def pybind_parameters(obj):
    """[(name, kind, default)] from the signature line pybind11 writes first in a function's docstring,
    `name(a: T, b: T = 1) -> R`; its parameters take positions or keywords."""
    line = obj.__doc__.splitlines()[0]
    inside = line[line.index("(") + 1:line.rindex(") ->")]
    out = []
    for p in split_top_level(inside):
        name, _, rest = p.partition(":")
        _, eq, default = rest.partition(" = ")
        value = inspect.Parameter.empty
        if eq:
            value = ast.literal_eval(default.strip())
        out.append((name.strip(), inspect.Parameter.POSITIONAL_OR_KEYWORD, value))
    return out


def runtime_parameters(fn):
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


class CompiledModule(unittest.TestCase):
    def setUp(self):
        self.core = routelab._core
        self.stub = stub_names(stub_tree("_routelab.pyi").body)

    def test_every_name_of_the_module_is_in_the_stub_and_no_other(self):
        defined = {n for n in dir(self.core) if not (n.startswith("__") and n.endswith("__"))} | {"__version__"}
        self.assertEqual(defined - set(self.stub), set(), "in the module, missing from _routelab.pyi")
        public_stub = {n for n in self.stub if not n.startswith("_") or n in defined}
        self.assertEqual(public_stub - defined, set(), "in _routelab.pyi, not in the module")

    def test_functions_take_the_parameters_the_stub_names(self):
        for name, node in self.stub.items():
            if isinstance(node, ast.FunctionDef):
                with self.subTest(function=name):
                    self.assertEqual(stub_parameters(node), pybind_parameters(getattr(self.core, name)))

    def test_step_law_members(self):
        cls = self.core.StepLaw
        members = stub_names(self.stub["StepLaw"].body)
        defined = {n for n in dir(cls) if not n.startswith("_")}
        self.assertEqual(set(members), defined)
        for name, node in members.items():
            with self.subTest(member=name):
                self.assertEqual(is_property(node), isinstance(getattr(cls, name), property))
                if not is_property(node):
                    self.assertEqual(stub_parameters(node), pybind_parameters(getattr(cls, name)))

    def test_the_signature_reader_sees_a_wrong_stub(self):
        # Planted drift: a parameter renamed, a default changed, a parameter dropped.
        want = pybind_parameters(self.core._passkey)
        for text in ("def _passkey(run, lengths, depths, trials, seed, csv, threads=0, progress=None): ...",
                     "def _passkey(run, lengths, depths, trials, seed, out, threads=1, progress=None): ...",
                     "def _passkey(run, lengths, depths, trials, seed, out, threads=0): ..."):
            self.assertNotEqual(stub_parameters(ast.parse(text).body[0]), want, text)


class Package(unittest.TestCase):
    def setUp(self):
        self.stub = stub_names(stub_tree("__init__.pyi").body)

    def test_every_public_name_is_in_the_stub_and_no_other(self):
        public = set(routelab.__all__) | {"git_revision"}
        self.assertEqual(public - set(self.stub), set(), "in routelab.__all__, missing from __init__.pyi")
        for name in self.stub:
            if name not in ("__all__",):
                self.assertTrue(hasattr(routelab, name), f"__init__.pyi names {name}, which routelab lacks")

    def test_functions_and_run_take_the_parameters_the_stub_names(self):
        for name, node in self.stub.items():
            if isinstance(node, ast.FunctionDef):
                with self.subTest(function=name):
                    self.assertEqual(stub_parameters(node), runtime_parameters(getattr(routelab, name)))
        for cls in (routelab.Run, routelab.StepLaw):
            members = stub_names(self.stub[cls.__name__].body)
            methods = {n for n, v in vars(cls).items() if not n.startswith("_") or n == "__init__"}
            self.assertEqual({n for n, v in members.items() if isinstance(v, ast.FunctionDef)}, methods)
            for name in methods:
                with self.subTest(cls=cls.__name__, method=name):
                    node = members[name]
                    self.assertEqual(is_property(node), isinstance(vars(cls)[name], property))
                    if not is_property(node):
                        self.assertEqual(stub_parameters(node), runtime_parameters(getattr(cls, name)))
        # The Python StepLaw's attributes are the compiled one's properties.
        compiled = {n for n in dir(routelab._core.StepLaw) if not n.startswith("_")} - {"products", "scores"}
        self.assertEqual({n for n, v in stub_names(self.stub["StepLaw"].body).items()
                          if isinstance(v, ast.AnnAssign)}, compiled)


if __name__ == "__main__":
    unittest_main_with_binary("test_stubs")
