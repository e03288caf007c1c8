"""Grade a class of 30 Exercise 1 submissions (good, blank and hostile) with `--jobs 2` and time it.

    python scripts/bench/grade_class_demo.py [--jobs 2] [--timeout 2] [--keep DIR]

The class: 10 reference solutions, 8 blank notebooks and 12 hostile fixtures of tests/data/submissions/
(the attacks of issue 15 and the older broken ones), one folder per student. Prints the wall time, the
time per submission, and checks that every good one scored 5/5 and every blank one 0/5. Part of
`make bench`: the figure is reported, never asserted.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from test_grading import FIXTURES, build_submission  # noqa: E402 - the tests' reference notebook builder

from minigpt.exercises import EXERCISES  # noqa: E402
from minigpt.grading.folder import grade_folder  # noqa: E402
from minigpt.grading.grader import BUDGET_S  # noqa: E402

HOSTILE = ("oracle_call", "guard_disabled", "dir_fd", "sitecustomize", "escaped_daemon", "kill_parent",
           "endless_heartbeats", "other_jobs", "memory_bomb", "disk_fill", "leaky_messages", "infinite_loop")


def build_class(folder: Path, good: int = 10, blank: int = 8) -> dict[str, str]:
    """One sub-folder per student; returns student -> kind ("good", "blank" or the fixture's name)."""
    kinds = {}
    reference = folder / "reference.ipynb"
    build_submission("ex01", reference)
    for i in range(good):
        kinds[f"good{i:02d}"] = "good"
    for i in range(blank):
        kinds[f"blank{i:02d}"] = "blank"
    for name in HOSTILE:
        kinds[f"hostile_{name}"] = name
    for student, kind in kinds.items():
        (folder / student).mkdir()
        source = {"good": reference, "blank": ROOT / "exercises" / EXERCISES["ex01"].notebook}.get(
            kind, FIXTURES / f"{kind}.ipynb")
        shutil.copy(source, folder / student / "submission.ipynb")
    reference.unlink()
    return kinds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=2.0, help="seconds per cell and per question")
    parser.add_argument("--keep", type=Path, default=None, help="write the class and the results here")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="grade-class-"))
    try:
        (work / "class").mkdir(parents=True)
        kinds = build_class(work / "class")
        start = time.monotonic()
        results = dict(grade_folder("ex01", work / "class", work / "out", timeout=args.timeout, seed=0,
                                    jobs=args.jobs, echo=False))
        wall = time.monotonic() - start
        by_student = {s: next(r for slug, r in results.items() if slug.startswith(f"{s}__submission")) for s in kinds}
        wrong = [s for s, k in kinds.items() if k in ("good", "blank")
                 and by_student[s].score != (5 if k == "good" else 0)]
        good = sorted(by_student[s].execution_time for s, k in kinds.items() if k == "good")
        print(f"# grade_class_demo: {len(results)} submissions (10 good, 8 blank, {len(HOSTILE)} hostile), "
              f"--jobs {args.jobs}, --timeout {args.timeout:g}")
        print(f"wall time {wall:.1f} s, {wall / len(results):.2f} s per submission; "
              f"sum of per-submission times {sum(r.execution_time for r in results.values()):.1f} s")
        print(f"good submissions: median {good[len(good) // 2]:.1f} s, max {good[-1]:.1f} s each (hostile ones in the "
              f"same class); worst case by construction: {len(results)} x --budget {BUDGET_S:g} s / --jobs {args.jobs}")
        print("good and blank scored as expected" if not wrong else f"UNEXPECTED scores: {wrong}")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
