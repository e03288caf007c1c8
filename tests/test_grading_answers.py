"""No answer in reach of the sandbox that grades it, and no correct answer scored zero.

- The oracle route, for every question of every exercise: the exercise's own module (the code that computes
  the expected outputs) pasted into a notebook, one top-level statement per cell (imports that fail are
  skipped), and each question's function defined as its oracle. Only the questions whose oracle *is* the
  exercise (it uses nothing but the inputs, torch and numpy) may score; every other one scores 0.
- The routes the second red team found (ex09 Q1 through `attention`, ex06 Q1 through `KVCache.update`, and
  `attention` under `causal_visible` since Q1 asks for the chunk's attention too, ex04 Q3 through `RequestMeters`,
  ex05 Q1 through a meta-device MiniGPT), ex06 Q3 through a `MiniGPT` loaded
  with the given weights and a `KVCache` holding the given rows, and ex06 Q4 through that `MiniGPT` and
  `generate` reached with getattr, score 0 in the grader, and each computes the right answer outside it (the
  attack is real, not a typo).
- Solutions written the way the notebooks' prose suggests (ex12 Q4's ``costs.evaluate``) score full marks.
- Realistic notebooks (magics, shell lines, Colab leftovers, the solution in the setup cell or in a check cell,
  CRLF line ends) score what the plain reference scores.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import random
import re
from pathlib import Path
from typing import Any

import nbformat
import profiles
import pytest
from test_grading import ROOT, build_submission, details

from minigpt.exercises import EXERCISES
from minigpt.exercises.check import run_check
from minigpt.grading.folder import grade_folder

pytestmark = pytest.mark.sandbox

# Questions whose oracle uses only the inputs, torch and numpy: the oracle is a correct solution, so it scores.
# (ex05.q2's oracle returns the logits, not the token: it is no answer.)
ORACLE_IS_THE_SOLUTION = {
    "ex04.q4",  # np.linalg.lstsq on the columns P, D (the hint's method)
    "ex05.q3", "ex05.q4",  # the passed model's forward and F.cross_entropy; topk + softmax
    "ex06.q2",  # repeat_interleave + SDPA
    "ex08.q1",  # best of the repeats: 2·bytes / min(copy_s), 2·n³ / min(matmul_s)
    "ex09.q2",  # unflatten + mean
    "ex10.q3",  # log_softmax, KL, mean
    # softmax(q·kᵀ/√d_h)·v and logsumexp over all keys at once: the values the tile loop must reproduce (the
    # grader checks values, not the method: the notebook asks for the loop, the review cannot enforce it)
    "ex13.q3",
    "ex13.q4",  # each chunk's max, sum and normalised output, computed chunk by chunk with torch
    "ex14.q2",  # (p − q·accept) / (1 − Σ q·accept), or None, with torch (ex14.replacement_for)
    "ex14.q4",  # the replay of the rounds at every γ, plain Python (ex14_rounds.best_from_rounds)
    "ex17.q1",  # the W partial products, sliced and stacked with torch
    "ex17.q3",  # the placement walk, plain Python (ex17_placements.collectives)
}


def oracle_cells(eid: str) -> list[str]:
    """The exercise's module as cells: every top-level statement its own cell (imports in try/except; a helper
    module of `minigpt.exercises`, such as `ex17_placements`, inlined the same way, since the sandbox does not
    offer the exercises' package), the stand-in for `minigpt.exercises.spec`'s names, then each question's
    function bound to its oracle."""
    cells = ["class Question:\n    def __init__(self, id, function, signature, cases, oracle, *rest, **kw):\n"
             "        self.id, self.function, self.oracle = id, function, oracle\n\n\n"
             "class Exercise:\n    def __init__(self, id, notebook, title, questions=()):\n"
             "        self.questions = questions\n\n\n"
             "def _inert(*args, **kwargs):\n    return _inert\n"]
    cells += _module_cells(inspect.getmodule(EXERCISES[eid].questions[0].oracle))
    cells.append("for _q in EXERCISE.questions:\n"
                 "    globals()[_q.function] = (lambda o: lambda **kw: o(**kw))(_q.oracle)\n")
    return cells


def _module_cells(module: Any) -> list[str]:
    source = inspect.getsource(module)
    cells = []
    for node in ast.parse(source).body:
        text = ast.get_source_segment(source, node) or ""
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "minigpt.exercises.spec":
            cells.append("\n".join(f"{a.asname or a.name} = _inert" for a in node.names
                                   if a.name not in ("Exercise", "Question")))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("minigpt.exercises.ex"):
            cells += _module_cells(importlib.import_module(node.module))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            cells.append("try:\n    " + text + "\nexcept Exception as err:\n    print('import failed:', err)\n")
        elif not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            cells.append(text)
    return cells


def notebook_with(eid: str, cells: list[str], dest: Path) -> None:
    nb = nbformat.read(ROOT / "exercises" / EXERCISES[eid].notebook, as_version=4)
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, dest)


@pytest.mark.source_text  # builds cells from the exercise module's source
@pytest.mark.parametrize("eid", sorted(EXERCISES))
def test_oracle_route_scores_only_where_the_oracle_is_the_solution(eid: str, tmp_path: Path) -> None:
    (tmp_path / "subs").mkdir()
    notebook_with(eid, oracle_cells(eid), tmp_path / "subs" / "oracle.ipynb")
    ((_, result),) = grade_folder(eid, tmp_path / "subs", tmp_path / "out", timeout=30, echo=False)
    scored = {f"{eid}.{t.name.split(':')[0]}" for t in result.tests if t.score > 0}
    expected = {qid for qid in ORACLE_IS_THE_SOLUTION if qid.startswith(eid + ".")}
    assert scored == expected, {t.name: t.output for t in result.tests}


ROUTES = {
    "ex09.q1": ("from minigpt.runtime.model import attention, causal_visible\n\n\n"
                "def grouped_attention(q, k, v):\n"
                "    return attention(q, k, v, causal_visible(0, q.shape[2], q.device))\n"),
    "ex06.q1": ("from minigpt import KVCache, ModelConfig\n"
                "from minigpt.runtime.model import attention, causal_visible\n\n\n"
                "def chunk_attention(q, k_cache, v_cache, k_new, v_new, S):\n"
                "    B, H, S_max, d_h = k_cache.shape\n"
                "    cache = KVCache(ModelConfig(L=1, H=H, H_kv=H, d_h=d_h, S_max=S_max), B)\n"
                "    cache.k[0], cache.v[0] = k_cache, v_cache\n"
                "    cache.advance(S)\n"
                "    k, v = cache.update(0, k_new, v_new)\n"
                "    return attention(q, k, v, causal_visible(S, k_new.shape[2], q.device)), k, v\n"),
    "ex06.q3": ("import torch\n\nfrom minigpt import KVCache, MiniGPT, ModelConfig\n\n\n"
                "@torch.no_grad()\n"
                "def decode_from_cache(params, config, k_cache, v_cache, token):\n"
                "    model = MiniGPT(ModelConfig.from_dict(config))\n"
                "    model.load_state_dict(params)\n"
                "    P = k_cache.shape[3]\n"
                "    cache = KVCache(model.config, token.shape[0])\n"
                "    cache.k[:, :, :, :P], cache.v[:, :, :, :P] = k_cache, v_cache\n"
                "    cache.advance(P)\n"
                "    return model(token.view(-1, 1), cache)[:, -1]\n"),
    "ex06.q4": ("import minigpt\nfrom minigpt import MiniGPT, ModelConfig\n\n\n"
                "def generate_from_weights(params, config, prompt, D):\n"
                "    model = MiniGPT(ModelConfig.from_dict(config))\n"
                "    model.load_state_dict(params)\n"
                "    run = getattr(minigpt, 'gen' + 'erate')\n"
                "    return run(model.eval(), prompt, D, use_cache=True).tokens\n"),
    "ex04.q3": ("import importlib\n\n\n"
                "def rates_from_meters(prompt_tokens, prefill_s, decode_steps, decode_s):\n"
                "    meters = importlib.import_module('minigpt.runtime.meters')\n"
                "    m = meters.RequestMeters(prompt_tokens=prompt_tokens, prefill_s=prefill_s,\n"
                "                             generated_tokens=decode_steps + 1, decode_steps=decode_steps,\n"
                "                             decode_s=decode_s)\n"
                "    return m.prefill_tok_s, m.decode_tok_s\n"),
    "ex05.q1": ("import torch\n\nfrom minigpt import MiniGPT, ModelConfig\n\n\n"
                "def param_count(L, d, V, S_max, d_ffn):\n"
                "    with torch.device('meta'):\n"
                "        model = MiniGPT(ModelConfig(L=L, H=1, H_kv=1, d_h=d, d_ffn=d_ffn, V=V, S_max=S_max))\n"
                "    return sum(p.numel() for p in model.parameters())\n"),
}


def _function(source: str, name: str) -> object:
    namespace: dict[str, object] = {}
    exec(compile(source, "<route>", "exec"), namespace)  # noqa: S102 - the test's own attack, run to prove it works
    return namespace[name]


@pytest.mark.parametrize("qid", sorted(ROUTES))
def test_named_oracle_routes_work_outside_and_score_zero_inside(qid: str, tmp_path: Path) -> None:
    eid, q = qid.split(".")
    question = EXERCISES[eid].question(q)
    # The attack is real: with the whole package in reach (as on a student's machine) it passes the check.
    assert run_check(qid, _function(ROUTES[qid], question.function)).status == "pass"
    (tmp_path / "subs").mkdir()
    notebook_with(eid, [ROUTES[qid]], tmp_path / "subs" / "route.ipynb")
    ((_, result),) = grade_folder(eid, tmp_path / "subs", tmp_path / "out", timeout=30, echo=False)
    test = next(t for t in result.tests if t.name.startswith(q + ":"))
    assert test.score == 0, test.output
    assert "not available while grading" in test.output, test.output
    review = (tmp_path / "out" / "review.csv").read_text(encoding="utf-8")
    assert "route" in review, review  # the instructor sees the attempt


PROSE = {  # solutions written the way the notebook's prose and the hint say, where they name the package
    "ex12": {"q4": ("from minigpt import costs\nfrom minigpt.costs.presets import HARDWARE, MODELS\n\n\n"
                    "def preemption_costs(model, S, mfu, link_bandwidth):\n"
                    "    m, hw = MODELS[model], HARDWARE['H100 SXM']\n"
                    "    flops = costs.evaluate(costs.prefill_flops, m, P=S)\n"
                    "    recompute = max(m.N_params * 2 / hw.bandwidth, flops / (mfu * hw.peak_flops))\n"
                    "    b = costs.evaluate(costs.kv_bytes_per_token, m, s=2)\n"
                    "    return recompute, 2 * S * b / link_bandwidth\n")},
    "ex06": {"q3": ("import math\n\nimport torch\nimport torch.nn.functional as F\n\n\n"
                    "def decode_from_cache(params, config, k_cache, v_cache, token):\n"
                    "    H, H_kv, d_h, d = (config[n] for n in ('H', 'H_kv', 'd_h', 'd'))\n"
                    "    B, P, g = token.shape[0], k_cache.shape[3], H // H_kv\n"
                    "    x = params['tok_emb.weight'][token] + params['pos_emb.weight'][P]\n"
                    "    for i in range(config['L']):\n"
                    "        p = {n.split('.', 2)[2]: t for n, t in params.items() if n.startswith(f'blocks.{i}.')}\n"
                    "        h = F.layer_norm(x, (d,), p['ln1.weight'], p['ln1.bias'])\n"
                    "        q, k, v = F.linear(h, p['attn.qkv.weight'], p['attn.qkv.bias']).split(\n"
                    "            [H * d_h, H_kv * d_h, H_kv * d_h], dim=-1)\n"
                    "        k = torch.cat([k_cache[i], k.view(B, H_kv, 1, d_h)], 2).repeat_interleave(g, 1)\n"
                    "        v = torch.cat([v_cache[i], v.view(B, H_kv, 1, d_h)], 2).repeat_interleave(g, 1)\n"
                    "        a = F.scaled_dot_product_attention(q.view(B, H, 1, d_h), k, v).reshape(B, d)\n"
                    "        x = x + F.linear(a, p['attn.out.weight'], p['attn.out.bias'])\n"
                    "        h = F.layer_norm(x, (d,), p['ln2.weight'], p['ln2.bias'])\n"
                    "        h = F.gelu(F.linear(h, p['mlp.up.weight'], p['mlp.up.bias']))\n"
                    "        x = x + F.linear(h, p['mlp.down.weight'], p['mlp.down.bias'])\n"
                    "    x = F.layer_norm(x, (d,), params['ln_f.weight'], params['ln_f.bias'])\n"
                    "    return x @ params['tok_emb.weight'].T\n"),
             "q4": ("import torch\nimport torch.nn.functional as F\n\n\n"
                    "def generate_from_weights(params, config, prompt, D):\n"
                    "    L, H, H_kv, d_h, d = (config[n] for n in ('L', 'H', 'H_kv', 'd_h', 'd'))\n"
                    "    (B, P), g, cache = prompt.shape, H // H_kv, [None] * L\n\n"
                    "    def run(tokens, start):\n"
                    "        T = tokens.shape[1]\n"
                    "        x = params['tok_emb.weight'][tokens] + params['pos_emb.weight'][start:start + T]\n"
                    "        for i in range(L):\n"
                    "            p = {n.split('.', 2)[2]: t for n, t in params.items()\n"
                    "                 if n.startswith(f'blocks.{i}.')}\n"
                    "            h = F.layer_norm(x, (d,), p['ln1.weight'], p['ln1.bias'])\n"
                    "            q, k, v = F.linear(h, p['attn.qkv.weight'], p['attn.qkv.bias']).split(\n"
                    "                [H * d_h, H_kv * d_h, H_kv * d_h], dim=-1)\n"
                    "            q = q.view(B, T, H, d_h).transpose(1, 2)\n"
                    "            k, v = (t.view(B, T, H_kv, d_h).transpose(1, 2) for t in (k, v))\n"
                    "            if cache[i] is not None:\n"
                    "                k, v = torch.cat([cache[i][0], k], 2), torch.cat([cache[i][1], v], 2)\n"
                    "            cache[i] = (k, v)\n"
                    "            k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)\n"
                    "            a = F.scaled_dot_product_attention(q, k, v, is_causal=start == 0)\n"
                    "            a = a.transpose(1, 2).reshape(B, T, d)\n"
                    "            x = x + F.linear(a, p['attn.out.weight'], p['attn.out.bias'])\n"
                    "            h = F.layer_norm(x, (d,), p['ln2.weight'], p['ln2.bias'])\n"
                    "            h = F.gelu(F.linear(h, p['mlp.up.weight'], p['mlp.up.bias']))\n"
                    "            x = x + F.linear(h, p['mlp.down.weight'], p['mlp.down.bias'])\n"
                    "        x = F.layer_norm(x[:, -1], (d,), params['ln_f.weight'], params['ln_f.bias'])\n"
                    "        return (x @ params['tok_emb.weight'].T).argmax(-1)\n\n"
                    "    out = [run(prompt, 0)]\n"
                    "    for i in range(1, D):\n"
                    "        out.append(run(out[-1].view(B, 1), P + i - 1))\n"
                    "    return torch.stack(out, 1).tolist()\n")},
}


@pytest.mark.parametrize("eid", sorted(PROSE))
def test_solutions_following_the_prose_score_full_marks(eid: str, tmp_path: Path) -> None:
    for qid, source in PROSE[eid].items():  # each also passes the student-side check
        assert run_check(f"{eid}.{qid}", _function(source, EXERCISES[eid].question(qid).function)).status == "pass"
    (tmp_path / "subs").mkdir()
    notebook_with(eid, list(PROSE[eid].values()), tmp_path / "subs" / "prose.ipynb")
    ((_, result),) = grade_folder(eid, tmp_path / "subs", tmp_path / "out", timeout=30, echo=False)
    for test in result.tests:
        if test.name.split(":")[0] in PROSE[eid]:
            assert test.score == test.max_score, test.output


def realistic(source_cells: list[nbformat.NotebookNode]) -> None:
    """Dress a reference notebook as a student's Colab notebook (in place)."""
    code = [c for c in source_cells if c.cell_type == "code"]
    setup, solutions = code[0], [c for c in code if any(t.startswith("solution:") for t in c.metadata.get("tags", []))]
    setup.source += "\n\n" + solutions[0].source  # the first answer written into the setup cell
    solutions[0].source = "# moved to the top\n!nvidia-smi\n%load_ext autoreload\n%autoreload 2\n"
    solutions[1].source = "%%time\n# @title Question 2 { display-mode: \"form\" }\n" + solutions[1].source
    solutions[2].source = (solutions[2].source + "\n%time _ = 1 + 1\nfiles = !ls\nprefill_flops?\n"
                           '"""A docstring line that starts\n%with a percent sign stays as written."""\n')
    solutions[3].source = solutions[3].source.replace("\n", "\r\n")
    checks = [c for c in code if any(t.startswith("check:") for t in c.metadata.get("tags", []))]
    checks[-1].source = solutions[4].source + "\n" + checks[-1].source  # the last answer in a check cell
    solutions[4].source = "# see below\n"


def test_magics_and_colab_leftovers_never_change_a_correct_verdict(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    subs.mkdir()
    build_submission("ex01", subs / "plain.ipynb")
    nb = nbformat.read(subs / "plain.ipynb", as_version=4)
    realistic(nb.cells)
    nbformat.write(nb, subs / "colab.ipynb")
    grade_folder("ex01", subs, tmp_path / "out", timeout=30, jobs=2, echo=False)
    rows = details(tmp_path / "out")
    assert all(score == 1.0 for score, _ in rows["plain"].values()), rows["plain"]
    assert all(score == 1.0 for score, _ in rows["colab"].values()), rows["colab"]


def test_feedback_never_shows_an_expected_value(tmp_path: Path) -> None:
    """A wrong answer's feedback names the case and the problem, never the expected number, and a resubmission
    (other bytes) gets other cases, so no table of answers can be gathered."""
    (tmp_path / "subs").mkdir()
    wrong = "def prefill_flops(L, d, P, V=0):\n    return 12345\n"
    notebook_with("ex01", [wrong], tmp_path / "subs" / "a.ipynb")
    notebook_with("ex01", [wrong + "# again\n"], tmp_path / "subs" / "b.ipynb")
    results = dict(grade_folder("ex01", tmp_path / "subs", tmp_path / "out", seed=7, timeout=30, jobs=2,
                                echo=False))
    a, b = results["a"].tests[0].output, results["b"].tests[0].output
    assert "not the package's value" in a and "expected" not in a.replace("expected values", ""), a
    for text in (a, b):
        # The case's inputs may be large numbers (they are random per submission); the answer never shows.
        calls = re.findall(r"prefill_flops\(([^)]*)\)", text)
        assert calls, text
        for call in calls:
            inputs = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", call)}
            expected = EXERCISES["ex01"].question("q1").oracle(**inputs)
            assert str(expected) not in text and f"{expected:,}" not in text, text
        rest = re.sub(r"prefill_flops\([^)]*\)", "", text).replace("12345", "")
        assert not re.search(r"\d{5,}", rest), text  # no large number but the inputs and the student's own
    assert a != b  # other bytes, other cases
    assert results["a"].seed != results["b"].seed


def test_the_same_bytes_get_the_same_cases_for_the_instructor(tmp_path: Path) -> None:
    from minigpt.grading.grader import submission_seed

    data = (ROOT / "exercises" / EXERCISES["ex01"].notebook).read_bytes()
    assert submission_seed(7, data) == submission_seed(7, data)
    assert submission_seed(7, data) != submission_seed(8, data) != submission_seed(7, data + b" ")
    assert len({submission_seed(random.getrandbits(32), data) for _ in range(50)}) == 50


HABITS = {  # what students' notebooks do that has nothing to do with the answer, each cost marks before
    "imports": ("import asyncio\n\nimport matplotlib.pyplot as plt\nimport pandas as pd\nfrom IPython.display "
                "import HTML, display\nfrom tqdm.auto import tqdm, trange\n"),
    "plot": ("fig, (ax, bx) = plt.subplots(1, 2, figsize=(8, 3))\nax.plot([1, 2], [3, 4], label='a')\n"
             "ax.set_ylim(0, ax.get_ylim()[1] * 1.1)\nbx.legend()\nfig.suptitle('x')\nplt.show()\n"),
    "table": "display(pd.DataFrame([{'a': 1}]))\ndisplay(HTML('<b>done</b>'))\n",
    "progress": "total = sum(i for i in tqdm(range(3), desc='warm-up'))\nfor _ in trange(2):\n    pass\n",
    "await": "await asyncio.sleep(0)\n",
    "f-string 3.12": 'row = {"name": "run"}\nprint(f"{row["name"]}: {total:.2f}")\n',
}


def with_habits(nb: nbformat.NotebookNode) -> None:
    """Every solution cell starts with the imports and ends with a plot, a table, a progress bar, a top-level
    await and a Python 3.12 f-string, as a student's Colab notebook would (in place)."""
    for cell in nb.cells:
        if any(t.startswith("solution:") for t in cell.metadata.get("tags", [])):
            cell.source = HABITS["imports"] + "\n" + cell.source + "\n\n" + "".join(
                HABITS[k] for k in ("plot", "table", "progress", "await", "f-string 3.12"))


# The six exercises a student's habits were tried on; `make test` grades three of them (nbformat 3 with GQA,
# nbformat 3 with a handout helper, the link presets), `make test-thorough` all six.
HABIT_EXERCISES = ["ex06", "ex14", "ex16"] + (["ex11", "ex17", "ex18"] if profiles.PROFILE == "thorough" else [])


@pytest.mark.parametrize("eid", HABIT_EXERCISES)
def test_ordinary_notebook_habits_cost_no_marks(eid: str, tmp_path: Path) -> None:
    """The reference solution with plots, tables, progress bars, `display`, a top-level `await` and a Python
    3.12 f-string in every answer cell scores full marks; half of them are saved as nbformat 3 files. The bugs
    it catches: a sandbox without matplotlib, tqdm, IPython or pandas (each import lost the question), the
    handout's own imports failing there (ex16's LINKS), a 3.11 parser for a 3.12 notebook, an nbformat 3 file
    called corrupted."""
    subs = tmp_path / "subs"
    subs.mkdir()
    build_submission(eid, subs / "habits.ipynb")
    nb = nbformat.read(subs / "habits.ipynb", as_version=4)
    with_habits(nb)
    if eid in ("ex06", "ex14", "ex17"):
        nbformat.write(nbformat.convert(nb, 3), subs / "habits.ipynb", version=3)
        assert '"worksheets"' in (subs / "habits.ipynb").read_text()
    else:
        nbformat.write(nb, subs / "habits.ipynb")
    ((_, result),) = grade_folder(eid, subs, tmp_path / "out", timeout=60, jobs=1, echo=False)
    assert all(t.score == t.max_score for t in result.tests), [(t.name, t.output) for t in result.tests]


def test_a_wrong_shape_shows_the_students_output_not_the_answers() -> None:
    """A list of the wrong length is named by what the student returned; the feedback never says how long the
    hidden answer is (it said "expected a sequence of 164 values"). The bug it catches: conforms' own message,
    which holds the expected shape, shown for a hidden case. The parent's verdict, on ex16 Q2's cases."""
    from minigpt.grading.cases import prepare
    from minigpt.grading.verdicts import _compare

    prepared = prepare("ex16", 5)
    q = prepared.exercise.question("q2")
    cases, expected = prepared.cases[q.id], prepared.expected[q.id]
    ok, text = _compare(q, cases, expected, [[[0.5] * 1000, 1.0] for _ in cases])
    assert not ok and "you returned a sequence of 2 values" in text, text  # the pair; its first item is 1000 long
    assert "expected" not in text.replace("expected shape", ""), text
    assert re.findall(r"sequence of (\d+)", text) == ["2"], text  # no length of the hidden answer
    assert "[10 items]" in text and len(text) < 1000  # long inputs outlined, not cut


def test_none_and_a_value_read_the_same_as_a_wrong_value() -> None:
    """ex14 Q2 answers a distribution or None, ex07 Q2 a batch size or None: a student's None where the hidden
    answer is a value, or a value where it is None, gets the words of any wrong value, so feedback does not tell
    which of the two the hidden answer is. The bug it catches: the shape check's words for a mismatch ("you
    returned None", "expected a number"), shown only when the kinds differ."""
    from minigpt.grading.cases import prepare
    from minigpt.grading.verdicts import _compare

    for eid, qid, value in (("ex14", "q2", {"$tensor": [0.0], "shape": [1]}), ("ex07", "q2", 3)):
        prepared = prepare(eid, 11)
        q = prepared.exercise.question(qid)
        for i, e in enumerate(prepared.expected[qid]):
            case, wrong = prepared.cases[qid][i], (value if e is None else None)
            if isinstance(wrong, dict) and e is None:
                wrong = {"$tensor": [0.0] * len(case["p"]["$float64"]), "shape": [len(case["p"]["$float64"])]}
            outputs = list(prepared.expected[qid])
            outputs[i] = wrong
            ok, text = _compare(q, prepared.cases[qid], prepared.expected[qid], outputs)
            assert not ok and text.startswith("not the package's value"), (eid, i, e, text)


def test_the_class_secret_cannot_be_found_from_feedback(tmp_path: Path) -> None:
    """A student sees their own cases; with a 32-bit class seed, a search over seeds checked against those cases
    found it (then every hidden case of every student follows). The default secret has 128 bits, each of which
    changes every submission's cases (an HMAC keyed with it), and a short seed is flagged in run.json. The bugs
    it catches: a short default, a seed derivation that ignores high bits of the key."""
    import json
    import secrets

    from minigpt.grading.grader import submission_seed

    data = b'{"cells": []}'
    key = secrets.randbits(128) | 1 << 127
    base = submission_seed(key, data)
    assert all(submission_seed(key ^ (1 << bit), data) != base for bit in range(0, 128, 3))
    for bad in (-1, 2**256, True, "7"):
        with pytest.raises(ValueError, match="class seed"):
            submission_seed(bad, data)
    (tmp_path / "subs").mkdir()
    grade_folder("ex01", tmp_path / "subs", tmp_path / "out", echo=False, unsafe_no_sandbox=True)
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    assert run["seed"].bit_length() == 128 and "weak_seed" not in run  # a draw of 119 bits was flagged weak
    grade_folder("ex01", tmp_path / "subs", tmp_path / "out2", seed=7, echo=False, unsafe_no_sandbox=True)
    assert "can be recovered" in json.loads((tmp_path / "out2" / "run.json").read_text())["weak_seed"]


def test_recomputing_the_prefix_loses_exercise_6_question_4_in_the_sandbox(tmp_path: Path) -> None:
    """ex06 Q4 asks for generation with the cache: the reference solution with each decode step replaced by a
    forward over the whole sequence (the same tokens, several times the FLOPs) loses the question in the sandbox,
    on the work the child measured, with the method's message, while the reference keeps it. The bug this
    catches: the method check wired into `check()` but not into the grader (or its bound computed in the child)."""
    solution = (ROOT / "exercises" / "solutions" / "ex06_implement_kv_cache.py").read_text(encoding="utf-8")
    step = "token = step(token.view(B, 1), P + i - 1).argmax(dim=-1)"
    assert solution.count(step) == 1
    recomputed = solution.replace(step, "token = step(torch.cat([prompt, torch.stack(out, dim=1)], dim=1), 0)"
                                        ".argmax(dim=-1)")
    (tmp_path / "subs").mkdir()
    notebook_with("ex06", [solution], tmp_path / "subs" / "cached.ipynb")
    notebook_with("ex06", [recomputed], tmp_path / "subs" / "recomputed.ipynb")
    results = dict(grade_folder("ex06", tmp_path / "subs", tmp_path / "out", timeout=60, echo=False))
    q4 = {name: next(t for t in r.tests if t.name.startswith("q4")) for name, r in results.items()}
    assert q4["cached"].score == q4["cached"].max_score, q4["cached"].output
    assert q4["recomputed"].score == 0 and "matrix-product FLOPs the cache needs" in q4["recomputed"].output, q4


NAIVE_MLA = ("import math\nimport torch\n\n\n"
             "def absorbed_decode(x, c, k_rope, w_q, w_qr, w_uk, w_uv, w_o, theta):\n"
             "    H, d_h, d_c = w_uk.shape\n"
             "    S, r = k_rope.shape\n"
             "    k = torch.einsum('sc,hdc->shd', c, w_uk)\n"
             "    k = torch.cat([k, k_rope[:, None].expand(S, H, r)], dim=-1)\n"
             "    v = torch.einsum('sc,hdc->shd', c, w_uv)\n"
             "    a = (S - 1) * theta ** (-2 * torch.arange(r // 2) / r)\n"
             "    qr = (w_qr @ x).view(H, r // 2, 2)\n"
             "    qr = torch.stack([qr[..., 0] * a.cos() - qr[..., 1] * a.sin(),\n"
             "                      qr[..., 0] * a.sin() + qr[..., 1] * a.cos()], -1)\n"
             "    q = torch.cat([(w_q @ x).view(H, d_h), qr.reshape(H, r)], dim=-1)\n"
             "    s = torch.einsum('hd,shd->hs', q, k) / math.sqrt(d_h + r)\n"
             "    p = torch.softmax(s, dim=-1)\n"
             "    return w_o @ torch.einsum('hs,shd->hd', p, v).reshape(-1)\n")


def test_a_question_about_the_method_is_graded_on_the_method(tmp_path: Path) -> None:
    """ex18 Q1 asks for the absorbed decode: the naive path (keys and values rebuilt from the latents) gives the
    same values and must lose the question in the sandbox, on the work the child measured (`Question.method`),
    while the reference solution keeps it. The bug this catches: a method question graded on values only (the
    naive path had full marks), or a measurement lost between the child and the parent."""
    solution = (ROOT / "exercises" / "solutions" / "ex18_cache_frontier.py").read_text(encoding="utf-8")
    (tmp_path / "subs").mkdir()
    notebook_with("ex18", [solution], tmp_path / "subs" / "absorbed.ipynb")
    notebook_with("ex18", [NAIVE_MLA], tmp_path / "subs" / "naive.ipynb")
    results = dict(grade_folder("ex18", tmp_path / "subs", tmp_path / "out", timeout=60, echo=False))
    q1 = {name: next(t for t in r.tests if t.name.startswith("q1")) for name, r in results.items()}
    assert q1["absorbed"].score == q1["absorbed"].max_score, q1["absorbed"].output
    assert q1["naive"].score == 0 and "rebuilt from the latents" in q1["naive"].output, q1
