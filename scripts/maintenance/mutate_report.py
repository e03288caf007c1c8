"""The mutation report of `mutate.py`: a module's score (`score`), its 95 % Wilson interval (`wilson`), and
mutation/report.md rendered from the results and the triage (`render`)."""

from __future__ import annotations

import ast
import hashlib
import json
import math
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def has_functions(module: str) -> bool:
    """Whether the module (a path from the repository's root) defines a function or method: mutmut mutates
    nothing else, so a module of data alone (presets) has no mutant to run."""
    tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) for node in ast.walk(tree))


def source_id(module: str) -> str | None:
    """The module's text as git names it (the blob id `git hash-object` prints), or None if it is gone: a result
    records the text it was run on, and the report lists the results whose module has changed since."""
    path = ROOT / module
    if not path.is_file():
        return None
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def code_id(text: str) -> str:
    """The module's code as Python parses it, without its docstrings or comments (sha1 of the `ast.dump`): mutmut
    mutates code only, so a result stays the module's while this is unchanged, whatever its prose says."""
    tree = ast.parse(text)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return hashlib.sha1(ast.dump(tree).encode()).hexdigest()


def module_code_id(module: str) -> str | None:
    """`code_id` of the module as it stands, or None if it is gone."""
    path = ROOT / module
    return code_id(path.read_text(encoding="utf-8")) if path.is_file() else None


def changed_since(result: dict) -> bool:
    """Whether the module's code has changed since its result was recorded: by `code` (`code_id`) where the result
    has one, else by `source` (the git blob id: any change of the text counts)."""
    if "code" in result:
        return result["code"] != module_code_id(result["module"])
    return result.get("source") != source_id(result["module"])


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson interval of a proportion k/n."""
    if n == 0:
        return (0.0, 1.0)
    p, d = k / n, 1 + z * z / n
    centre, half = (p + z * z / (2 * n)) / d, z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (centre - half, centre + half)


#: The statuses of mutmut that count as killed.
KILLS = ("killed", "timeout", "segfault", "caught by type check")


def score(result: dict) -> tuple[int, int]:
    """(killed, decided): timeouts count as killed (the mutant hangs the code), and so does a child mutmut records
    as a *segfault* (killed by a signal: its runner sends SIGKILL at the wall limit, which a loaded machine reaches
    before the CPU limit's SIGXCPU); no-test mutants count as survived; equivalent mutants (triage) leave the
    denominator."""
    c = result["counts"]
    killed = sum(c.get(status, 0) for status in KILLS)
    return killed, killed + c.get("survived", 0) + c.get("no tests", 0) + c.get("suspicious", 0)


VERDICTS = ("equivalent", "kept")


def load_triage(path: Path) -> dict[str, dict]:
    """mutation/triage.yml: each triaged survivor with its verdict and reason. `equivalent`: the mutant computes
    what the code computes (out of the denominator); `kept`: it computes something else that no test should
    tell apart, with the reason (it stays a survivor in the score)."""
    if not path.exists():
        return {}
    import yaml

    triage = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    for name, entry in triage.items():
        if not isinstance(entry, dict) or entry.get("verdict") not in VERDICTS or not str(entry.get("reason", "")):
            raise ValueError(f"{path}: {name} needs a verdict in {VERDICTS} and a reason, got {entry!r}")
    return triage


def render(results: Path, triage: dict[str, dict], modules: list[str], mutmut: str, target: float) -> str:
    """mutation/report.md: each module's counts and score (equivalent mutants out of the denominator), the
    survivors not yet triaged, and the target."""
    rows, open_survivors, done, survivors, changed = [], [], set(), set(), []
    for path in sorted(results.glob("minigpt.*.json")):
        r = json.loads(path.read_text(encoding="utf-8"))
        done.add(r["module"])
        if changed_since(r):
            changed.append(f"- `{r['module']}`" + ("" if r.get("source") else " (no text recorded)"))
        survivors.update(r["survivors"])
        equivalent = [s for s in r["survivors"] if triage.get(s, {}).get("verdict") == "equivalent"]
        killed, decided = score(r)
        decided -= len(equivalent)
        lo, hi = wilson(killed, decided)
        c = r["counts"]
        rows.append(f"| `{r['module']}` | {r['mutants']} | {killed} | {c.get('survived', 0) - len(equivalent)} | "
                    f"{len(equivalent)} | {c.get('no tests', 0)} | {c.get('timeout', 0) + c.get('segfault', 0)} | "
                    f"{killed / max(decided, 1):.1%} | {lo:.0%}–{hi:.0%} | "
                    f"{'yes' if decided and killed / decided >= target else 'no'} | {len(r.get('not_mutated', []))} | "
                    f"{r['seconds']} s |")
        open_survivors += [f"- `{s}`" for s in r["survivors"] if s not in triage]
    lines = [
        "# Mutation score of the mechanism modules",
        "",
        "Written by `python scripts/maintenance/mutate.py --report` from `mutation/results/` (one file per",
        f"module run by `make mutate`, mutmut {mutmut}) and `mutation/triage.yml` (equivalent mutants, each with",
        "its reason). Score = killed / (mutants − equivalent); a timeout counts as killed (the column counts",
        "too a child killed at its wall limit, which mutmut records as a segfault), a mutant no test reaches",
        f"as survived. Target: at least {target:.0%} in every module. The interval is Wilson's, 95 %.",
        "",
        "A blind spot: mutmut 3 does not mutate decorated functions (properties, `@torch.no_grad()`, caches;",
        "`@staticmethod` and `@classmethod` are mutated). The column *not mutated* counts them per module; a",
        "mechanism's core is better written with `with torch.no_grad():` in its body, where mutants reach it.",
        "",
        "| module | mutants | killed | survived | equivalent | no tests | timeout | score | 95 % | ≥ target "
        "| not mutated | time |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|",
        *rows,
        "",
        *_sample(results / "sample.json", triage, survivors, open_survivors),
        "## Survivors kept, with their reasons",
        "",
        "Each computes something other than the code, for the reason given, and stays a survivor in the",
        "score; most are a random case generator's range moved by one, with the question's edges and the",
        "bounds `tests/test_case_generators.py` checks intact.",
        "",
        *([f"- `{k}`: {v['reason']}" for k, v in triage.items() if v["verdict"] == "kept" and k in survivors]
          or ["None."]),
        "",
        "## Survivors not yet triaged",
        "",
        *(open_survivors or ["None."]),
        "",
        "## Triage entries whose mutant no longer survives (remove them)",
        "",
        *([f"- `{k}`" for k in triage if k not in survivors] or ["None."]),
        "",
        "## Results older than their module (run `make mutate MODULE=...` again)",
        "",
        "A result records the module it ran on (its git blob id, and its code: the syntax tree without docstrings);",
        "these modules' code has changed since, so their row above may no longer hold.",
        "",
        *(changed or ["None."]),
        "",
        "## Mechanism modules not yet run in full",
        "",
        *([f"- `{m}`" for m in modules if m not in done and has_functions(m)] or ["None."]),
        "",
        "## Modules of data alone (no function, so no mutant)",
        "",
        *([f"- `{m}`" for m in modules if m not in done and not has_functions(m)] or ["None."]),
        "",
    ]
    return "\n".join(lines)


def _sample(path: Path, triage: dict[str, dict], survivors: set[str], open_survivors: list[str]) -> list[str]:
    """The section of the seeded sample (`mutate_sample.py`) over the modules not run in full: its score
    and interval, over all and per subpackage; its survivors join `survivors` and the open ones
    `open_survivors`."""
    if not path.exists():
        return []
    r = json.loads(path.read_text(encoding="utf-8"))
    status = r["status"]
    survived = [k for k, v in status.items() if v in ("survived", "no tests", "suspicious")]
    survivors.update(survived)
    open_survivors += [f"- `{s}` (sample)" for s in survived if s not in triage]
    equivalent = {s for s in survived if triage.get(s, {}).get("verdict") == "equivalent"}
    groups: dict[str, list[str]] = {}
    for name in status:
        groups.setdefault(name.split(".")[1], []).append(name)
    rows = []
    for group, names in [("all", list(status)), *sorted(groups.items())]:
        decided = [n for n in names if n not in equivalent]
        killed = sum(status[n] in KILLS for n in decided)
        lo, hi = wilson(killed, len(decided))
        no_tests = sum(status[n] == "no tests" for n in decided)
        at = r.get("groups", {}).get(group, {})
        rows.append(f"| {group} | {len(names)} | {killed} | {len(decided) - killed} | {no_tests} | "
                    f"{len(names) - len(decided)} | {killed / max(len(decided), 1):.1%} | {lo:.0%}–{hi:.0%} | "
                    f"{at.get('commit', '')[:10]} | {at.get('seconds', r['seconds'] if group == 'all' else '')} |")
    total = sum(r["population"].values())
    reruns = r.get("reruns", {})
    again = [] if not reruns else [
        "", f"{len(reruns)} of its survivors ran again with the tests written since (`mutate_rerun.py`, each "
        "mutated function's text unchanged since its first run, so the same mutant) at "
        f"{', '.join(sorted({v['commit'][:10] for v in reruns.values()}))}: "
        f"{sum(v['status'] in ('killed', 'timeout') for v in reruns.values())} killed; the table counts "
        "their status now."]
    return [
        "## A sample of the modules not run in full",
        "",
        f"{r['n']} mutants drawn uniformly (seed {r['seed']}) from the {total:,} mutants of the "
        f"{len(r['population'])} mechanism modules with no full result, run by `mutate_sample.py` "
        f"one mutmut session per subpackage, each at the commit its row names ({r['seconds']} s in all); the "
        "interval is Wilson's, 95 %. *No tests*: no test reaches the mutated function, in its own process or "
        "in the worker processes it starts (a survivor).",
        *again,
        *([] if r.get("complete", True) else [
            "", f"**Incomplete**: {len(status)} of the {r['n']} drawn mutants have a result; the subpackages "
            "missing below have not run (`mutate_sample.py --resume` runs them)."]),
        "",
        "| subpackage | drawn | killed | survived | of which no tests | equivalent | score | 95 % | commit "
        "| time (s) |",
        "|---|---:|---:|---:|---:|---:|---:|---|---|---:|",
        *rows,
        "",
    ]
