"""The package's layers: the pure formulas import no torch, and one model shape feeds every formula."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from minigpt import costs
from minigpt.config import ModelConfig
from minigpt.costs import presets


def test_pure_formula_layer_imports_no_torch():
    code = (
        "import sys, minigpt, minigpt.config, minigpt.costs, minigpt.costs.presets, minigpt.costs.roofline, "
        "minigpt.costs.text_rates, minigpt.corpus.grammar\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'numpy', 'matplotlib', 'ipywidgets'))\n"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"the pure layer imported {out.stdout.strip()}"


def test_import_minigpt_is_light_until_a_model_is_used():
    code = "import sys, minigpt; a = 'torch' in sys.modules; minigpt.MiniGPT; print(a, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


@pytest.mark.parametrize("model", [ModelConfig(), ModelConfig(L=2, H=4, H_kv=2, d_h=8, d_ffn=48, V=50),
                                   *presets.MODELS.values()], ids=lambda m: getattr(m, "name", repr(m)))
def test_symbols_are_exactly_what_the_formulas_take(model):
    symbols = model.symbols()
    assert tuple(symbols) == costs.MODEL_SYMBOLS
    bound = costs.of(model)
    by_hand = costs.prefill_flops(L=model.L, P=17, d=model.d, H_kv=model.H_kv, d_h=model.d_h, d_ffn=model.d_ffn,
                                  V=model.V, B=3, ffn_matrices=model.ffn_matrices)
    assert bound.prefill_flops(P=17, B=3) == by_hand == costs.evaluate(costs.prefill_flops, model, P=17, B=3)
    assert bound.kv_bytes_per_token(s=2) == costs.kv_bytes_per_token(L=model.L, H_kv=model.H_kv, d_h=model.d_h, s=2)


def test_bound_costs_reject_unknown_arguments_and_names():
    bound = costs.of(ModelConfig())
    with pytest.raises(ValueError, match=r"prefill_flops\(\) takes no argument \['Q'\]"):
        bound.prefill_flops(P=4, Q=1)
    with pytest.raises(AttributeError, match="no formula 'nope'"):
        bound.nope  # noqa: B018
    with pytest.raises(ValueError, match="no formula takes"):
        costs.of({"L": 1, "H": 2})


def test_every_formula_is_exported_and_callable():
    for name in costs.FORMULAS:
        assert callable(getattr(costs, name)), name
    assert set(costs.FORMULAS) <= set(costs.__all__)


# ---------------------------------------------------------------------------------------------
# Imports point down: ARCHITECTURE.md's layer table, read from the source with `ast`

PACKAGE = Path(__file__).resolve().parents[1] / "minigpt"

#: Each layer and the layers it may import directly (ARCHITECTURE.md, "Layers of minigpt"); what those
#: may import, it may import too. `exercises` (the questions) sits below `grading` (the grader that runs them).
LAYERS: dict[str, set[str]] = {
    "config": set(),
    "i18n": set(),
    "costs": {"config"},
    "runtime": {"config", "costs"},
    "serving": {"runtime", "costs"},
    "corpus": {"runtime"},
    "measure": {"runtime", "costs"},
    "interop": {"config", "runtime"},
    "distributed": {"runtime", "serving", "measure", "costs"},
    # i18n: the kernel note in the reader's language; corpus: the sentences web_export ships for the engine page
    "book": {"costs", "runtime", "serving", "measure", "i18n", "corpus"},
    "exercises": {"config", "i18n", "costs", "runtime", "serving", "corpus", "measure", "interop", "book",
                  "distributed"},
    "grading": {"exercises"},
}


def _below(layer: str) -> set[str]:
    seen, todo = set(), list(LAYERS[layer])
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(LAYERS[name])
    return seen


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the `minigpt` modules it imports anywhere in its file (top level, functions, TYPE_CHECKING).

    ``from P import n`` is an edge to P.n when that is a module, else to P; ``from minigpt import MiniGPT``
    (the package's lazy names) to the module the root's `_LAZY` table names. Imports of one's own
    ancestor package (a formula module looking up its registry) are not edges."""
    files = {_module_name(p, root): p for p in root.rglob("*.py")}
    lazy = {}
    for node in ast.walk(ast.parse(files["minigpt"].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "_LAZY":
            lazy = ast.literal_eval(node.value)
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    full = f"{node.module}.{a.name}"
                    if full in files:
                        targets.append(full)
                    elif node.module == "minigpt" and a.name in lazy:
                        targets.append(lazy[a.name])
                    else:
                        targets.append(node.module)
            for target in targets:
                while target not in files and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target in files and target != name and not name.startswith(target + "."):
                    edges.add(target)
        graph[name] = edges
    return graph


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if len(parts) < 2:
        return None  # the package root: lazy names only
    if parts[1] in ("config", "i18n"):
        return parts[1]
    return parts[1] if parts[1] in LAYERS else None


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """`a -> b` for each import whose target's layer is neither a's own nor below it."""
    bad = []
    for src, targets in graph.items():
        for dst in targets:
            a, b = _layer(src), _layer(dst)
            if a and b and a != b and b not in _below(a):
                bad.append(f"{src} ({a}) -> {dst} ({b})")
    return sorted(bad)


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_imports_point_down_and_form_no_cycle():
    graph = import_graph()
    assert "minigpt.costs.roofline" in graph and "minigpt.runtime.model" in graph["minigpt.runtime.generate"]
    assert upward_imports(graph) == [], "imports that point up ARCHITECTURE.md's layer table"
    assert import_cycles(graph) == [], "modules that import each other"


def test_the_layer_check_catches_what_it_is_for(tmp_path):
    """Each fault the check exists for, planted in a small copy of the package: an upward import
    (config -> costs), one hidden in a function (runtime -> corpus), and a cycle inside a layer."""
    pkg = tmp_path / "minigpt"
    files = {
        "__init__.py": "_LAZY = {'MiniGPT': 'minigpt.runtime.model'}\n",
        "config.py": "def n():\n    from minigpt.costs.params import param_count\n",
        "costs/__init__.py": "", "costs/params.py": "from minigpt.config import n\n",
        "costs/roofline.py": "def t():\n    from minigpt.costs.batching import step\n",
        "costs/batching.py": "from minigpt.costs.roofline import t\n",
        "runtime/__init__.py": "", "runtime/model.py": "from minigpt import costs\n",
        "runtime/tokenizer.py": "def f():\n    from minigpt.corpus.grammar import PAD\n",
        "corpus/__init__.py": "", "corpus/grammar.py": "from minigpt import MiniGPT\n",
    }
    for rel, text in files.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text, encoding="utf-8")
    graph = import_graph(pkg)
    assert upward_imports(graph) == ["minigpt.config (config) -> minigpt.costs.params (costs)",
                                     "minigpt.runtime.tokenizer (runtime) -> minigpt.corpus.grammar (corpus)"]
    assert graph["minigpt.corpus.grammar"] == {"minigpt.runtime.model"}  # a lazy name resolves to its module
    assert ["minigpt.costs.batching", "minigpt.costs.roofline"] in import_cycles(graph)
