"""What the sandbox offers in place of the modules that would hand out answers: the stand-ins (`STAND_INS`),
the stubs of the runtime modules a question's inputs do not need (`_stub`), and the ``minigpt.costs`` that offers
only the formulas a question's instructions name (`_offered_formulas`).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable

from minigpt.grading.allowlist import PACKAGE_DIR, StagingError, _rel, closure

# ---------------------------------------------------------------------------------------------
# Stand-ins: what the sandbox offers in place of modules that would hand out answers


def _inert_check() -> str:
    return ('"""Stand-in written by the grader: `check` does nothing while grading."""\n\n'
            "\ndef check(qid, function, *, seed=None):\n"
            '    """Do nothing but say so: the instructor\'s grader compares the outputs itself."""\n'
            '    print(f"{qid}: check skipped while grading")\n')


def _preset_records() -> str:
    from minigpt.costs import presets
    from minigpt.exercises.spec import preset_fields

    def table(name: str) -> str:
        return json.dumps({key: preset_fields(p) for key, p in getattr(presets, name).items()})

    kinds = {"MODELS": "ModelPreset", "HARDWARE": "HardwarePreset", "LINKS": "LinkPreset", "KV_LINKS": "LinkPreset",
             "HOST_LINKS": "LinkPreset"}  # every table a handout imports
    return ('"""Stand-in written by the grader: the presets as read-only records (fields, no formulas)."""\n\n'
            "import json\n\nfrom minigpt.exercises.wire import records\n\n"
            + "".join(f"{name} = records({kind!r}, json.loads({table(name)!r}))\n" for name, kind in kinds.items()))


def _child_only() -> str:
    return '"""The grading child and its wire format (the grading parent is not in the sandbox)."""\n'


def _book() -> str:
    return ('"""Stand-in written by the grader: the setup cell\'s `setup` seeds the RNGs and returns the CPU."""\n\n'
            "\ndef setup(seed=0, **kwargs):\n"
            "    import random\n\n    import numpy as np\n    import torch\n\n"
            "    random.seed(seed)\n    np.random.seed(seed)\n    torch.manual_seed(seed)\n"
            "    return torch.device('cpu')\n\n\n"
            "def in_colab():\n    return False\n\n\n"
            "def __getattr__(name):\n"
            "    raise ImportError(f'minigpt.book.{name} is not available while grading')\n")


def _no_formulas() -> str:
    return ('"""Stand-in written by the grader: the formulas are answers; only the presets\' records are here."""\n\n'
            "\ndef __getattr__(name):\n"
            '    raise ImportError(f"minigpt.costs.{name} is not available while grading: formulas are answers")\n')


# Module path (relative to the package) -> its text.


STAND_INS: dict[str, Callable[[], str]] = {
    "grading/__init__.py": _child_only,
    "exercises/__init__.py": _inert_check,  # the notebooks' `from minigpt.exercises import check`
    "costs/__init__.py": _no_formulas,  # the package of the formulas, without them
    "costs/presets.py": _preset_records,  # `from minigpt.costs.presets import HARDWARE, MODELS`
    "book/__init__.py": _book,  # the setup cell's `from minigpt.book import setup`
}


def _stub(rel: str) -> str:
    """A module with the public names of minigpt/`rel`, each refusing to run: importable, computes nothing."""
    module = "minigpt." + rel.removesuffix(".py").replace("/", ".")
    tree = ast.parse((PACKAGE_DIR / rel).read_text(encoding="utf-8"))
    lines = [f'"""Stand-in written by the grader: {module} computes answers to this question, so its functions and',
             'classes refuse to run here."""', "", "",
             "def _refuse(name):",
             f"    raise RuntimeError(f'{module}.{{name}} is not available while grading this question "
             "(it computes the answer)')", ""]
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines += ["", f"def {node.name}(*args, **kwargs):", f"    _refuse({node.name!r})", ""]
        elif isinstance(node, ast.ClassDef):
            lines += ["", f"class {node.name}:", "    def __init__(self, *args, **kwargs):",
                      f"        _refuse({node.name!r})", ""]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is None or not all(isinstance(t, ast.Name) for t in targets):
                continue
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
            lines += [f"{t.id} = {value!r}" for t in targets if isinstance(t, ast.Name)]
    return "\n".join(lines) + "\n"


def _offered_formulas(formulas: frozenset[str]) -> tuple[str, set[str]]:
    """The `minigpt.costs` stand-in offering `formulas` (and nothing else), and the costs modules it needs."""
    from minigpt import costs

    modules, imports = set(), []
    for name in sorted(formulas):
        home = getattr(costs, name).__module__
        rel = _rel(home)
        if rel is None or not rel.startswith("costs/"):
            raise StagingError(f"formula {name!r} is not a function of a minigpt.costs module")
        modules.add(rel)
        imports.append(f"from {home} import {name}")
    text = ('"""Stand-in written by the grader: the formulas are answers; only those this question\'s instructions '
            'use are here."""\n\n' + "\n".join(imports) + "\n\n"
            f"FORMULAS = {tuple(sorted(formulas))!r}\n\n\n"
            "def __getattr__(name):\n"
            '    raise ImportError(f"minigpt.costs.{name} is not available while grading: formulas are answers")\n')
    costs_modules = tuple(p.relative_to(PACKAGE_DIR).as_posix() for p in (PACKAGE_DIR / "costs").glob("*.py"))
    return text, closure(modules, costs_modules) - {"costs/__init__.py", "costs/presets.py"}

