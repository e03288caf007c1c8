"""Attack the exercise grader as a hostile class would, and print what each attack got.

    python scripts/maintenance/red_team_grader.py [--jobs 2] [--keep DIR]

Every attack is one notebook: a correct submission (the reference solutions) plus one hostile cell, or a
notebook built around the attack. For each, the script prints the score and a short reason; "held" means the
attack earned nothing it should not have and changed nothing outside its own verdicts. Run by hand (the
grader's own tests hold the assertions: tests/test_grading*.py); the summary goes into the report.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

import nbformat  # noqa: E402
from test_grading import build_submission  # noqa: E402

from minigpt.grading.folder import grade_folder  # noqa: E402

FRAME = (
    "import sys\nframe = sys._getframe()\nwhile 'job' not in frame.f_locals:\n    frame = frame.f_back\n"
    "job = frame.f_locals['job']\n"
)

# name -> (exercise, extra cells appended to the reference, what "held" means)
ATTACKS: dict[str, tuple[str, list[str], str]] = {
    "torch_function_liar": (
        "ex06",
        [
            "import torch\n\n\nclass T(torch.Tensor):\n    @classmethod\n"
            "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
            "        if getattr(func, '__name__', '') in ('tolist', 'as_subclass', 'numel', 'detach', 'cpu'):\n"
            "            return [[0.0]]\n"
            "        return super().__torch_function__(func, types, args, kwargs or {})\n\n\n"
            "def attend(q, k, v):\n    return torch.zeros(1).as_subclass(T)\n"
        ],
        "q2 scores 0 (shape measured on data)",
    ),
    "int_subclass_liar": (
        "ex01",
        [
            "class I(int):\n    def __int__(self):\n        return 10**9\n\n"
            "    def __repr__(self):\n        return '42'\n\n\n"
            "def prefill_flops(L, P, d):\n    return I(3)\n"
        ],
        "q1 scores 0",
    ),
    "list_subclass_liar": (
        "ex06",
        [
            "class L(list):\n    def __len__(self):\n        return 999\n    def __iter__(self):\n"
            "        return iter(range(999))\n\n\ndef generate_from_weights(params, config, prompt, D):\n"
            "    return L([[0] * D] * len(prompt))\n"
        ],
        "q4 judged on the real items",
    ),
    "huge_int": ("ex01", ["def prefill_flops(L, P, d):\n    return 10**5000\n"], "q1 0, no big-int arithmetic"),
    "object_array": (
        "ex06",
        [
            "import numpy as np\n\n\ndef packed_cache_write(k_cache, v_cache, k_new, v_new, lengths, counts):\n"
            "    return np.array([object()], dtype=object)\n"
        ],
        "q5 0",
    ),
    "forge_done_event": (
        "ex01",
        [FRAME + "import os\nos.write(int(job['events_fd']), b'{\"event\": \"done\"}\\n')\n"],
        "run stopped as tampered, all 0",
    ),
    "forge_rejected_event": (
        "ex01",
        [
            FRAME + "import os\nos.write(int(job['events_fd']), "
            'b\'{"event": "rejected", "kind": "too_large", "message": "x"}\\n\')\n'
        ],
        "tampered (a rejection is only accepted first)",
    ),
    "read_real_model_source": (
        "ex09",
        [
            "import minigpt.runtime.model as m, inspect\nSRC = inspect.getsource(m)\n"
            "print('HAS_SOFTMAX', 'softmax' in SRC)\n"
            "import glob\nprint('FOUND', [p for p in glob.glob('/**/model.py', recursive=True) if 'minigpt' in p])\n"
        ],
        "only the stub is there",
    ),
    "poison_sys_modules": (
        "ex06",
        [
            "import sys, types\nfake = types.ModuleType('minigpt.exercises.wire')\nfake.encode = lambda v, depth=0: 0\n"
            "sys.modules['minigpt.exercises.wire'] = fake\n"
            "def chunk_attention(*a, **k):\n    return 0\n"
        ],
        "q1 0 (the child bound encode before any cell ran)",
    ),
    "persist_between_runs": (
        "ex06",
        [
            "import os\nos.makedirs('/tmp/stash', exist_ok=True)\nopen('/tmp/stash/x', 'w').write('1')\n"
            "print('STASH_SEEN', sorted(os.listdir('/tmp')))\n"
        ],
        "each run's /tmp is new",
    ),
    "cgroup_escape": (
        "ex01",
        [
            "import os\nprint('SYS', os.path.exists('/sys/fs/cgroup'))\nprint('CG', open('/proc/self/cgroup').read())\n"
            "try:\n    open('/sys/fs/cgroup/cgroup.procs', 'w').write('1')\nexcept Exception as e:\n"
            "    print('WRITE', type(e).__name__)\n"
        ],
        "no cgroupfs in the sandbox",
    ),
    "raise_rlimits": (
        "ex01",
        [
            "import resource\ntry:\n    resource.setrlimit(resource.RLIMIT_AS, (-1, -1))\n    print('RAISED')\n"
            "except Exception as e:\n    print('RLIMIT', type(e).__name__)\n"
        ],
        "hard limits stay",
    ),
    "fork_bomb": (
        "ex01",
        [
            "import os\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n            import time\n"
            "            time.sleep(60)\n            os._exit(0)\n        n += 1\nexcept OSError as e:\n"
            "    print('FORKS', n, type(e).__name__)\n"
        ],
        "stopped at the task limit, answers still graded",
    ),
    "ansi_in_output_and_errors": (
        "ex01",
        [
            "print('\\x1b[2J\\x1b]0;pwned\\x07\\x1b[31mRED')\n\n\ndef prefill_flops(L, P, d):\n"
            "    raise ValueError('\\x1b[2J\\x1b]8;;http://evil\\x07click\\x1b]8;;\\x07')\n"
        ],
        "no escape byte in the log or the feedback",
    ),
    "nested_json_bomb": ("ex01", None, "corrupted notebook, parsed in the sandbox"),
    "fifo_submission": ("ex01", None, "refused, never opened"),
    "ignore_sigalrm_loop": (
        "ex01",
        [
            "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\n\n\ndef prefill_flops(L, P, d):\n"
            "    while True:\n        pass\n"
        ],
        "q1 killed and 0, others graded",
    ),
    "seed_by_resubmission": (
        "ex01",
        ["def prefill_flops(L, P, d):\n    return 1\n"],
        "two copies differing by one byte see different cases",
    ),
    "many_findings": ("ex01", ["\n".join(f"import gc as g{i}" for i in range(2000))], "review capped at 200 rows"),
    "runtime_in_model_group": (
        "ex05",
        [
            # right outside the sandbox (check() passes): the package's own generation answers the question
            "import minigpt\n\n\ndef next_token(model, tokens):\n"
            "    return int(minigpt.generate(model, [tokens], 1, use_cache=True).tokens[0][0])\n"
        ],
        "q2 0, not available while grading: generate's functions are stubs even where the model is real (ex06 "
        "hands out no model any more)",
    ),
}


def build(folder: Path, name: str, eid: str, extra: list[str] | None) -> None:
    path = folder / f"{name}.ipynb"
    if name == "nested_json_bomb":
        path.write_bytes(b'{"cells": ' + b"[" * 200_000 + b"]" * 200_000 + b"}")
        return
    if name == "fifo_submission":
        import os

        os.mkfifo(path)
        return
    build_submission(eid, path)
    nb = nbformat.read(path, as_version=4)
    nb.cells += [nbformat.v4.new_code_cell(c) for c in extra or []]
    nbformat.write(nb, path)
    if name == "seed_by_resubmission":
        shutil.copy(path, folder / f"{name}_copy.ipynb")
        with open(folder / f"{name}_copy.ipynb", "a", encoding="utf-8") as f:
            f.write(" ")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--keep", type=Path, default=None)
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="red-team-"))
    by_exercise: dict[str, list[str]] = {}
    for name, (eid, _, _) in ATTACKS.items():
        by_exercise.setdefault(eid, []).append(name)
    try:
        for eid, names in by_exercise.items():
            subs = work / eid / "subs"
            subs.mkdir(parents=True)
            for name in names:
                build(subs, name, eid, ATTACKS[name][1])
            out = work / eid / "out"
            grade_folder(eid, subs, out, timeout=10, jobs=args.jobs, echo=False, budget=120)
            with open(out / "details.csv", newline="", encoding="utf-8") as f:
                rows = list(csv.DictReader(f))
            for name in [*names, *(["seed_by_resubmission_copy"] if "seed_by_resubmission" in names else [])]:
                mine = [r for r in rows if r["submission"] == name]
                score = sum(float(r["score"]) for r in mine)
                zeros = {r["question"]: r["output"][:110] for r in mine if float(r["score"]) == 0}
                log = out / "logs" / f"{name}.txt"
                text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
                marks = [
                    line
                    for line in text.splitlines()
                    if line.split(" ")[0]
                    in ("HAS_SOFTMAX", "FOUND", "STASH_SEEN", "SYS", "WRITE", "RLIMIT", "RAISED", "FORKS", "RED")
                ]
                print(
                    json.dumps(
                        {
                            "attack": name,
                            "exercise": eid,
                            "score": f"{score:g}/{len(set(r['question'] for r in mine))}",
                            "zeros": zeros,
                            "log": marks,
                            "escape_in_log": "\x1b" in text,
                            "held_if": ATTACKS.get(name, ("", [], "see its twin"))[2],
                        },
                        ensure_ascii=False,
                    )
                )
            review = (out / "review.csv").read_text(encoding="utf-8")
            print(
                json.dumps(
                    {
                        "exercise": eid,
                        "review_rows": review.count("\n") - 1,
                        "escape_in_tables": any("\x1b" in p.read_text(encoding="utf-8") for p in out.glob("*.csv")),
                    }
                )
            )
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
