"""What a student's notebook imports for show, offered inside the sandbox so that an ordinary habit costs no
marks: plots, progress bars, `display`, tables. The sandbox holds torch, numpy, safetensors and the runtime of
`minigpt`; these libraries are not there, and an answer never depends on them, so each is a stand-in that
draws nothing (`DISPLAY_ONLY`).

- `matplotlib`, `mpl_toolkits`, `seaborn`, `plotly`, `IPython`, `ipywidgets`, `pandas`: every name is an
  `Inert` value: calling it, reading an attribute or an item, iterating, a `with` block, arithmetic all work and
  give another `Inert`; `subplots` gives a figure and as many axes as asked, so ``fig, (a, b) =
  plt.subplots(1, 2)`` unpacks. An answer computed *with* pandas gets nothing useful back: the exercises'
  index says the grader offers these for display only.
- `tqdm` (`tqdm.auto`, `tqdm.notebook`...): `tqdm(iterable)` yields the iterable's items, `trange(n)` is
  `range(n)`, and the bar's methods do nothing.
- An exercise's own module (`from minigpt.exercises.ex14 import round_law_report`, a handout's self-check
  against the package): calling any of its names prints that it is skipped, as `check` does; reading
  anything else from it raises ImportError.

`install()` appends one finder to the end of `sys.meta_path`, so a real library, where there is one, wins.
"""

from __future__ import annotations

import sys
import types
from importlib.machinery import ModuleSpec
from typing import Any

DISPLAY_ONLY = ("matplotlib", "mpl_toolkits", "seaborn", "plotly", "IPython", "ipywidgets", "pandas")
PROGRESS = ("tqdm",)


class Inert:
    """What a display call returns while grading: anything done with it gives another `Inert`; nothing is drawn."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return subplots if name == "subplots" else Inert()

    def __call__(self, *args: Any, **kwargs: Any) -> Inert:
        return Inert()

    def __getitem__(self, key: Any) -> Inert:
        return Inert()

    def __setitem__(self, key: Any, value: Any) -> None:
        pass

    def __iter__(self):
        return iter(())

    def __len__(self) -> int:
        return 0

    def __enter__(self) -> Inert:
        return self

    def __exit__(self, *exc: Any) -> bool:
        return False

    def __repr__(self) -> str:
        return "<not drawn while grading>"

    def __format__(self, spec: str) -> str:
        return repr(self)

    def _same(self, *args: Any) -> Inert:
        return Inert()

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _same
    __floordiv__ = __rfloordiv__ = __pow__ = __rpow__ = __neg__ = __abs__ = _same


class Axes(list):
    """The axes `subplots` returns for a row, a column or a grid: a list of `Inert` (rows of them for a grid)."""

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, tuple):
            item: Any = self
            for k in key:
                item = list.__getitem__(item, k) if isinstance(item, list) else Inert()
            return item
        return list.__getitem__(self, key)

    @property
    def flat(self) -> list:
        return [a for row in self for a in (row if isinstance(row, list) else [row])]

    def ravel(self) -> list:
        return self.flat

    flatten = ravel


def subplots(nrows: int = 1, ncols: int = 1, *args: Any, **kwargs: Any) -> tuple[Inert, Any]:
    """`plt.subplots`: a figure and one axes, a row or column of them, or a grid (rows of axes)."""
    nrows, ncols = int(nrows), int(ncols)
    if nrows == ncols == 1:
        return Inert(), Inert()
    if nrows == 1 or ncols == 1:
        return Inert(), Axes(Inert() for _ in range(nrows * ncols))
    return Inert(), Axes(Axes(Inert() for _ in range(ncols)) for _ in range(nrows))


class Progress:
    """`tqdm(iterable, ...)`: the iterable's items, unchanged; every method of the bar does nothing."""

    def __init__(self, iterable: Any = None, *args: Any, **kwargs: Any) -> None:
        self.iterable = iterable

    def __iter__(self):
        return iter(self.iterable if self.iterable is not None else ())

    def __len__(self) -> int:
        return len(self.iterable) if self.iterable is not None else 0

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: Any) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return lambda *args, **kwargs: None


def trange(*args: Any, **kwargs: Any) -> Progress:
    return Progress(range(*args))


class Skipped:
    """A name of an exercise's module while grading: calling it prints that it is skipped, as `check` does;
    nothing else of it exists (that module computes the answers)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        print(f"{self._name}: skipped while grading")

    def __getattr__(self, attr: str) -> Any:
        raise ImportError(f"{self._name}.{attr} is not available while grading: the exercise's module computes "
                          "the answers")


def _exercise_module(fullname: str) -> bool:
    parts = fullname.split(".")
    return len(parts) == 3 and parts[:2] == ["minigpt", "exercises"] and parts[2][:2] == "ex" \
        and parts[2][2:].isdigit()


class _StandIn(types.ModuleType):
    """A stand-in module: its names are `Inert` (or, for tqdm, the pass-through bar; for an exercise's module,
    `Skipped`)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if _exercise_module(self.__name__):
            return Skipped(f"{self.__name__}.{name}")
        if self.__name__.split(".")[0] in PROGRESS:
            return {"tqdm": Progress, "trange": trange}.get(name, Progress)
        return subplots if name == "subplots" else Inert()


class _Finder:
    """Finds the stand-ins (a package each, so any submodule imports too) when nothing real was found."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if _exercise_module(fullname):
            return ModuleSpec(fullname, self)
        if fullname.split(".")[0] not in DISPLAY_ONLY + PROGRESS:
            return None
        return ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: ModuleSpec) -> types.ModuleType:
        module = _StandIn(spec.name, "Stand-in written by the grader: shows nothing while grading.")
        if spec.submodule_search_locations is not None:
            module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


def install() -> None:
    """Offer the stand-ins to `import`, after every real finder."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())
