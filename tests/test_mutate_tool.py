"""scripts/maintenance/mutate.py (`make mutate`) counts what mutmut found the way CONTRIBUTING says: a
timeout is a kill, a mutant no test reaches is a survivor, an equivalent mutant (mutation/triage.yml) leaves
the denominator; and a module's tests include the ones that reach it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "maintenance"))
import mutate  # noqa: E402


def test_wilson_interval_brackets_the_proportion():
    assert mutate.wilson(0, 0) == (0.0, 1.0)
    lo, hi = mutate.wilson(90, 100)
    assert lo < 0.9 < hi and hi - lo < 0.13
    assert mutate.wilson(400, 400)[1] == pytest.approx(1.0)


def test_score_counts_timeouts_as_kills_and_untested_mutants_as_survivors():
    result = {"counts": {"killed": 7, "timeout": 1, "survived": 1, "no tests": 1}}
    assert mutate.score(result) == (8, 10)
    # mutmut records a child SIGKILLed at its wall limit as a "segfault": a kill, never left out of the score
    assert mutate.score({"counts": {"killed": 7, "segfault": 2, "survived": 1}}) == (9, 10)


def _report_of_one_module(tmp_path, monkeypatch, triage: dict) -> str:
    """The report of a module `minigpt/x.py` of 10 mutants, 8 killed, survivors m.a and m.b, with `triage`."""
    results = tmp_path / "results"
    results.mkdir()
    (results / "minigpt.x.json").write_text(json.dumps({
        "module": "minigpt/x.py", "mutants": 10, "counts": {"killed": 8, "survived": 2},
        "survivors": ["m.a", "m.b"], "seconds": 3}))
    monkeypatch.setattr(mutate, "RESULTS", results)
    monkeypatch.setattr(mutate, "_triage", lambda: triage)
    return mutate.report()


def test_report_takes_triaged_equivalents_out_of_the_denominator(tmp_path, monkeypatch):
    text = _report_of_one_module(tmp_path, monkeypatch, {"m.a": {"verdict": "equivalent", "reason": "same"}})
    assert "| `minigpt/x.py` | 10 | 8 | 1 | 1 | 0 | 0 | 88.9% |" in text
    assert "- `m.b`" in text and "- `m.a`" not in text


def test_a_modules_tests_include_the_ones_that_reach_it():
    tests = mutate.tests_of("minigpt/runtime/eviction.py")
    assert {"tests/test_eviction.py", "tests/test_eviction_reference.py"} <= set(tests)
    assert "tests/test_varlen.py" in mutate.tests_of("minigpt/serving/executor.py")
    assert "minigpt/runtime/eviction.py" in mutate.modules() and not any(
        m.endswith("__init__.py") for m in mutate.modules())


def test_a_cost_modules_tests_are_the_ones_that_name_it_not_every_importer_of_the_facade():
    """Most test files import `minigpt.costs`; a costs module keeps those that name what it defines,
    plus the ones that loop over every formula. Guards a rule that gives every costs module the
    facade's ~36 files (the grader and the engine run twice per module), or one that drops the
    formula tests that kill its mutants."""
    tests = set(mutate.tests_of("minigpt/costs/roofline.py"))
    assert {"tests/test_roofline.py", "tests/test_costs.py", "tests/test_costs_js.py"} <= tests
    assert not tests & set(mutate.COSTS_END_TO_END)
    assert "tests/test_speculative.py" not in tests  # imports the facade, names nothing of roofline
    assert "tests/test_speculative.py" in mutate.tests_of("minigpt/costs/attention_kernels.py")
    # _check defines private names only: the formula-wide files, among them the test of the checks
    assert set(mutate.tests_of("minigpt/costs/_check.py")) == set(mutate.COSTS_TESTS)
    assert "tests/test_costs_checks.py" in mutate.COSTS_TESTS
    # outside the cost model the facade still counts: test_serving_costs reaches the scheduler by
    # `from minigpt.serving import ...`, naming none of its functions
    assert "tests/test_serving_costs.py" in mutate.tests_of("minigpt/serving/scheduler.py")


def test_a_sample_resumes_only_the_same_draw_and_the_report_says_when_it_is_incomplete(tmp_path, monkeypatch):
    """`mutate_sample.py --resume` keeps an earlier run's subpackages only for the same seed, n and mutant
    names (a changed module draws other mutants: its old verdicts would be of another program), and a
    partial sample.json is reported as incomplete. Guards resuming across draws, and a partial score
    shown as the sample's."""
    import mutate_sample
    from mutate_report import render

    sample = tmp_path / "sample.json"
    monkeypatch.setattr(mutate_sample, "SAMPLE", sample)
    drawn = {"minigpt/serving/a.py": ["minigpt.serving.a.x_f__mutmut_1", "minigpt.serving.a.x_f__mutmut_2"],
             "minigpt/runtime/b.py": ["minigpt.runtime.b.x_g__mutmut_1"]}
    groups = {"serving": {"commit": "abcdef0123456", "seconds": 7,
                          "status": {"minigpt.serving.a.x_f__mutmut_1": "killed",
                                     "minigpt.serving.a.x_f__mutmut_2": "survived"}}}
    args = type("A", (), {"seed": 36, "n": 3})()
    mutate_sample._write(args, {"minigpt/serving/a.py": ["m"] * 9, "minigpt/runtime/b.py": ["m"] * 4}, drawn, groups,
                         dict(groups["serving"]["status"]), 7)
    assert mutate_sample._saved(36, 3, drawn) == groups
    assert mutate_sample._saved(37, 3, drawn) == {} and mutate_sample._saved(36, 4, drawn) == {}
    assert mutate_sample._saved(36, 3, {"minigpt/serving/a.py": ["minigpt.serving.a.x_f__mutmut_9"]}) == {}
    results = tmp_path / "results"
    results.mkdir()
    sample.rename(results / "sample.json")
    text = render(results, {}, [], "3.8.1", 0.9)
    assert "**Incomplete**: 2 of the 3 drawn mutants" in text
    assert "| serving | 2 | 1 | 1 | 0 | 0 | 50.0% |" in text and "abcdef0123 | 7 |" in text
    assert "- `minigpt.serving.a.x_f__mutmut_2` (sample)" in text


def test_a_worker_reports_each_function_it_reaches_once_per_test(tmp_path):
    """The child's side of `mutmut_children` (its sitecustomize, read at start-up): each name once per test (a
    name again after the plugin took the file), and no failure when the folder is gone (a forkserver keeps the
    environment of the session that started it: a hit that raised killed the worker before its group formed).
    A stand-in `mutmut` package takes the real one's place (it is installed by `make mutate` only)."""
    import os
    import subprocess

    fake = tmp_path / "fake" / "mutmut" / "mutation"
    fake.mkdir(parents=True)
    for folder in (fake.parent, fake):
        (folder / "__init__.py").write_text("")
    (fake / "trampoline.py").write_text("def record_trampoline_hit(name, caller=None):\n    raise AssertionError\n")
    hits = tmp_path / "hits"
    hits.mkdir()
    script = (
        "import os, shutil\n"
        "import mutmut.mutation.trampoline as t\n"
        "for name in ('a.f', 'a.f', 'b.g'):\n"
        "    t.record_trampoline_hit(name)\n"
        "path = os.path.join(os.environ['MUTMUT_CHILD_HITS'], f'{os.getpid()}.hits')\n"
        "print(open(path).read().split())\n"
        "os.remove(path)\n"
        "t.record_trampoline_hit('a.f')\n"
        "print(open(path).read().split())\n"
        "shutil.rmtree(os.environ['MUTMUT_CHILD_HITS'])\n"
        "t.record_trampoline_hit('c.h')\n"
        "print('alive')\n")
    children = ROOT / "scripts" / "maintenance" / "mutmut_children"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(children), str(fake.parent.parent)]),
           "MUTMUT_CHILD_HITS": str(hits)}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:3] == ["['a.f', 'b.g']", "['a.f']", "alive"], out.stderr


def test_a_kept_survivor_stays_in_the_score_and_is_listed_with_its_reason(tmp_path, monkeypatch):
    """A `kept` verdict explains a survivor without taking it out of the denominator (only `equivalent`
    does); a triage entry with another verdict, or no reason, is refused by name. Guards a triage file that
    raises a score by calling a real survivor harmless."""
    from mutate_report import load_triage

    text = _report_of_one_module(tmp_path, monkeypatch, {"m.a": {"verdict": "kept", "reason": "a range moved by one"}})
    assert "| `minigpt/x.py` | 10 | 8 | 2 | 0 | 0 | 0 | 80.0% |" in text
    kept = text.split("## Survivors kept, with their reasons")[1].split("## ")[0]
    open_ = text.split("## Survivors not yet triaged")[1].split("## ")[0]
    assert "- `m.a`: a range moved by one" in kept and "m.a" not in open_ and "- `m.b`" in open_
    for bad in ('"m.a": {verdict: fine, reason: "x"}', '"m.a": {verdict: kept}', '"m.a": kept'):
        (tmp_path / "triage.yml").write_text(bad + "\n")
        with pytest.raises(ValueError, match="m.a needs a verdict in"):
            load_triage(tmp_path / "triage.yml")


def test_a_rerun_runs_a_survivor_only_where_its_function_is_unchanged(tmp_path, monkeypatch):
    """`mutate_rerun.py` runs a saved survivor again only if mutmut writes its mutated function and the
    original the same now as at the commit of its first run (the same mutant); a survivor of a function
    changed since is another program and is not run. Guards a rerun that credits a new test with killing a
    mutant that no longer exists."""
    pytest.importorskip("mutmut")
    import subprocess

    import mutate_rerun

    repo = tmp_path / "repo"
    (repo / "minigpt").mkdir(parents=True)
    source = "def f(a):\n    return a + 1\n\n\ndef g(a):\n    return a * 2\n"
    (repo / "minigpt" / "m.py").write_text(source)
    for cmd in (["init", "-q"], ["add", "."], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "m"]):
        subprocess.run(["git", *cmd], cwd=repo, check=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    (repo / "minigpt" / "m.py").write_text(source.replace("a * 2", "a * 3"))
    monkeypatch.setattr(mutate, "ROOT", repo)
    monkeypatch.setattr(mutate, "SCRATCH", tmp_path / "scratch")
    assert mutate_rerun.module_of("minigpt.m.x_f__mutmut_1") == "minigpt/m.py"
    same, changed = mutate_rerun.unchanged(["minigpt.m.x_f__mutmut_1", "minigpt.m.x_g__mutmut_1"], commit)
    assert same == ["minigpt.m.x_f__mutmut_1"] and changed == ["minigpt.m.x_g__mutmut_1"]


def test_a_rerun_of_one_module_refuses_a_module_with_no_full_result(monkeypatch, capsys):
    """`mutate_rerun.py --module PATH` runs one full run's survivors; a path with no full result (a typo, a
    module only sampled) or a subpackage beside it is refused with the allowed modules named, before anything
    runs. Guards a misspelt module that silently reruns nothing and reports success."""
    pytest.importorskip("mutmut")
    import mutate_rerun

    for argv in (["--module", "minigpt/exercises/ex06x.py"], ["--module", "minigpt/exercises/ex06.py", "runtime"]):
        monkeypatch.setattr(sys, "argv", ["mutate_rerun.py", *argv])
        with pytest.raises(SystemExit) as e:
            mutate_rerun.main()
        assert e.value.code == 2
        err = capsys.readouterr().err
        assert "--module takes a module with a full result" in err and "minigpt/exercises/ex06.py" in err


def test_a_module_of_data_alone_is_not_reported_as_waiting_for_a_run(tmp_path):
    """mutmut mutates functions only, so a module of presets has no mutant and can never be "run in full".
    Guards: such a module listed among those still to run (a maintainer would chase a run that cannot
    happen), and a module with a function (a method counts) taken for data."""
    from mutate_report import has_functions, render

    assert not has_functions("minigpt/costs/presets_recent.py")
    assert has_functions("minigpt/costs/preset_types.py")  # methods of dataclasses only
    results = tmp_path / "results"
    results.mkdir()
    text = render(results, {}, ["minigpt/costs/presets_recent.py", "minigpt/costs/preset_types.py"], "3.8.1", 0.9)
    waiting = text.split("## Mechanism modules not yet run in full")[1].split("## Modules of data alone")[0]
    data = text.split("## Modules of data alone")[1]
    assert "preset_types.py" in waiting and "presets_recent.py" not in waiting
    assert "presets_recent.py" in data and "preset_types.py" not in data


def test_every_triaged_mutant_names_a_function_its_module_still_has():
    """A triage entry outlives its code when a function is removed or renamed (Exercise 18's old `_window_slots`
    kept ten equivalence verdicts after the question changed): a reviewer reading mutation/triage.yml would take
    them for today's, and a new function given the old name would inherit verdicts about other mutants. Each
    key (`module.x_function__mutmut_N`, `module.xǁClassǁmethod__mutmut_N`) must name a function the module
    defines, except a survivor of the sample, which belongs to the code at the sample's commit."""
    import re

    from mutate_report import load_triage

    sample = json.loads((ROOT / "mutation" / "results" / "sample.json").read_text(encoding="utf-8"))["status"]
    stale = []
    for key in load_triage(ROOT / "mutation" / "triage.yml"):
        if key in sample:
            continue  # a survivor of the sample, drawn from the code at the sample's commit
        match = re.fullmatch(r"(?P<module>[\w.]+)\.x(?:ǁ(?P<cls>\w+)ǁ(?P<method>\w+)|_(?P<fn>\w+?))__mutmut_\d+", key)
        assert match, f"{key}: not a mutmut mutant name"
        source = (ROOT / (match["module"].replace(".", "/") + ".py")).read_text(encoding="utf-8")
        found = (re.search(rf"^class {match['cls']}\b", source, re.M) and
                 re.search(rf"^\s+def {match['method']}\(", source, re.M)) if match["cls"] else \
            re.search(rf"^def {match['fn']}\(", source, re.M)
        if not found:
            stale.append(key)
    assert not stale, f"triage entries of functions that are gone: {stale}"


def test_the_report_lists_a_result_older_than_its_module(tmp_path, monkeypatch):
    """A module changed after its mutation run keeps its old row (Exercise 18's row stayed at 99.6 % after its
    fourth question was rewritten): each result records the text it ran on (`source`, the git blob id) and its code
    (`code`, the syntax tree without docstrings), and the report lists every result whose module's code differs
    now (its text, for a result without `code`), or that recorded neither."""
    import mutate_report

    monkeypatch.setattr(mutate_report, "ROOT", tmp_path)
    (tmp_path / "minigpt").mkdir()
    (tmp_path / "minigpt" / "a.py").write_text("def f():\n    return 1\n")
    (tmp_path / "minigpt" / "b.py").write_text("def g():\n    return 2\n")
    (tmp_path / "minigpt" / "c.py").write_text("def h():\n    return 3\n")
    results = tmp_path / "results"
    results.mkdir()
    recorded = {"a": mutate_report.source_id("minigpt/a.py"), "b": "0" * 40, "c": None}
    for name, source in recorded.items():
        record = {"module": f"minigpt/{name}.py", "mutants": 1, "counts": {"killed": 1}, "survivors": [],
                  "seconds": 1} | ({"source": source} if source else {})
        (results / f"minigpt.{name}.json").write_text(json.dumps(record))
    assert recorded["a"] == "b8595995dba30b1cf7ee90f336b3e3356ee99e1b"  # what `git hash-object` prints for a.py
    # A result with its code recorded (`code_id`) is the module's while the code is, whatever its docstrings say:
    # d's run saw another docstring (still its row), e's run saw another return value (no longer its row).
    (tmp_path / "minigpt" / "d.py").write_text('"""Now documented."""\n\n\ndef k():\n    """Four."""\n    return 4\n')
    (tmp_path / "minigpt" / "e.py").write_text("def m():\n    return 5\n")
    for name, ran_on in (("d", "def k():\n    return 4  # a comment\n"), ("e", "def m():\n    return 6\n")):
        record = {"module": f"minigpt/{name}.py", "mutants": 1, "counts": {"killed": 1}, "survivors": [],
                  "seconds": 1, "source": "0" * 40, "code": mutate_report.code_id(ran_on)}
        (results / f"minigpt.{name}.json").write_text(json.dumps(record))
    text = mutate_report.render(results, {}, [], "3.8.1", 0.9)
    older = text.split("## Results older than their module")[1].split("## ")[0]
    assert "`minigpt/a.py`" not in older and "`minigpt/d.py`" not in older
    assert "`minigpt/b.py`" in older and "`minigpt/c.py` (no text recorded)" in older and "`minigpt/e.py`" in older


def test_a_cache_of_drawn_cases_is_per_mutant_and_off_in_mutmuts_first_pass(monkeypatch) -> None:
    """`mutation_pass.per_mutant` (the range rows' draws, the seed harness's prepared cases): cached per arguments
    and per mutant under test, and never in mutmut's first pass (`stats`), which learns from each test's own calls
    which test reaches which function. The bugs it guards: a cache keyed by the arguments alone (a mutant's run
    would grade the unmutated generator's cases) and a cache in the first pass (ex06's run fell from 486 to 380
    killed: only a question's first row reached its generator)."""
    from mutation_pass import per_mutant

    calls: list[int] = []
    draw = per_mutant(lambda seed: calls.append(seed) or len(calls))
    monkeypatch.setenv("MUTANT_UNDER_TEST", "stats")
    assert (draw(1), draw(1)) == (1, 2)  # each call runs: each test's own hit
    for mutant, first in (("", 3), ("m1", 4), ("m2", 5)):
        monkeypatch.setenv("MUTANT_UNDER_TEST", mutant)
        assert (draw(1), draw(1)) == (first, first)  # once per mutant
    assert draw(2) == 6 and calls == [1, 1, 1, 1, 1, 2]


def test_a_shared_fixture_is_set_up_per_test_in_mutmuts_first_pass(tmp_path) -> None:
    """`mutation_pass.shared_scope`: a fixture set up once for its module under `make test` and every mutant's
    run, once per test in mutmut's first pass. The bug it guards: a module-scoped fixture (a disaggregated run, an
    exported GGUF file) attributed to the first test that set it up, so that mutmut runs only that test against
    the mutants of what the fixture calls, and a mutant the module's other tests kill counts as a survivor."""
    (tmp_path / "test_shared.py").write_text(
        "import os\n\nimport pytest\nfrom mutation_pass import shared_scope\n\nSET_UP = []\n\n\n"
        "@pytest.fixture(scope=shared_scope)\ndef made():\n    SET_UP.append(1)\n    return len(SET_UP)\n\n\n"
        "def test_first(made):\n    assert made == 1\n\n\n"
        "def test_second(made):\n    assert made == int(os.environ['EXPECTED'])\n")
    for mutant, expected in (("stats", 2), ("", 1), ("minigpt.x__f__mutmut_1", 1)):
        env = dict(os.environ, MUTANT_UNDER_TEST=mutant, EXPECTED=str(expected),
                   PYTHONPATH=os.pathsep.join([str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")]))
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                              "-p", "no:randomly", str(tmp_path / "test_shared.py")],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, (mutant, run.stdout[-2000:])
