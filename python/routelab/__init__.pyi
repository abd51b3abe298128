# Types of the routelab package (__init__.py); the compiled module's own are in _routelab.pyi.
# tests/python/test_stubs.py checks that every name of __all__ is here, with its parameters.
import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np
from numpy.typing import NDArray

from ._routelab import families as families
from ._routelab import family_flags as family_flags
from ._routelab import git_revision as git_revision
from ._routelab import mixing_window as mixing_window
from ._routelab import sim_help as sim_help
from ._routelab import sims as sims

__version__: str
__all__: List[str]

_Columns = Dict[str, NDArray[Any]]  # {CSV column: array}: float64, int64 or str
_Path = Union[str, "os.PathLike[str]"]
_Progress = Optional[Callable[[int, int], Any]]  # progress(done, total)
_Lengths = Union[str, Sequence[Union[str, int]]]  # "1x,4x,128" or ["1x", "4x", 128]

def sim(name: str, *, progress: _Progress = None, **flags: Any) -> _Columns: ...
def frame(columns: Mapping[str, Any]) -> Any: ...  # a pandas.DataFrame
def sim_frame(name: str, *, progress: _Progress = None, **flags: Any) -> Any: ...  # a pandas.DataFrame
def step_law(family: str, **flags: Any) -> StepLaw: ...

class StepLaw:  # the compiled StepLaw's properties (see _routelab.pyi), its walks' arguments checked in Python
    family: str
    d: int
    params: Dict[str, str]
    determinant: str
    haar_limit: str
    closed_forms: str
    gap: Optional[float]
    mean: Optional[NDArray[np.float64]]
    second_moment: Optional[NDArray[np.float64]]
    def __init__(self, law: Any) -> None: ...
    def products(self, lengths: Sequence[int], samples: int, seed: int = 1,
                 threads: int = 0) -> NDArray[np.float64]: ...
    def scores(self, n: int, samples: int, seed: int = 1, q: Optional[Sequence[float]] = None,
               k: Optional[Sequence[float]] = None, threads: int = 0) -> NDArray[np.float64]: ...
def train(config: Union[_Path, Mapping[str, Any]], out: _Path, *, resume: bool = False, threads: int = 0,
          progress: Optional[Callable[[int, int, float], Any]] = None) -> Run: ...
def load_run(path: _Path) -> Run: ...

class Run:
    path: str
    config: Dict[str, Any]
    step: int
    params: NDArray[np.float32]
    def __init__(self, path: _Path) -> None: ...
    @property
    def scheme(self) -> str: ...
    def eval(self, lengths: _Lengths = "1x,2x,4x,8x,16x,32x,64x", *, losses: bool = False, threads: int = 0,
             progress: _Progress = None) -> Dict[str, Any]: ...
    def probe(self, lengths: _Lengths = "1x,2x,4x,8x,16x,32x,64x", *, window: int = 0, max_windows: int = 4,
              eps: float = 0.05, csv: Optional[_Path] = None, threads: int = 0,
              progress: _Progress = None) -> Dict[str, _Columns]: ...
    def passkey(self, lengths: _Lengths = "1x,2x,4x,8x,16x,32x,64x", *,
                depths: Sequence[float] = (0, 0.25, 0.5, 0.75, 1), trials: int = 20, seed: int = 1,
                out: Optional[_Path] = None, threads: int = 0, progress: _Progress = None) -> _Columns: ...
    @property
    def task(self) -> str: ...
    def task_eval(self, lengths: _Lengths = "1x,2x,4x,8x,16x", *, p: Sequence[float] = (),
                  distances: Sequence[int] = (), reads: int = 2000, distance_reads: int = 500, seed: int = 1,
                  out: Optional[_Path] = None) -> _Columns: ...
    def task_sets(self, lengths: _Lengths = "1x,2x,4x,8x,16x", *, p: Sequence[float] = (),
                  distances: Sequence[int] = (), reads: int = 2000, distance_reads: int = 500,
                  seed: int = 1) -> List[Dict[str, Any]]: ...
    def export(self, out: _Path) -> str: ...
