"""Command line: grade a folder of submitted notebooks for one exercise.

    python -m minigpt.grading --exercise ex01 --submissions DIR --out OUTDIR [--timeout 30] [--jobs 1] [--seed N]
                              [--budget S] [--max-notebook-mib M] [--no-cgroups] [--unsafe-no-sandbox]

Writes OUTDIR/scores.csv (one row per submission), OUTDIR/details.csv (one row per question, with
the reason), OUTDIR/review.csv (references to answer functions or tampering found in the cells, for
the instructor), OUTDIR/results/<submission>/results.json (Gradescope format), OUTDIR/logs/ (each
notebook's output, capped) and OUTDIR/run.json (the class seed, to reproduce each submission's inputs, and
the limits in force: control groups or rlimits only, the seccomp filter).

Every submission runs in a bubblewrap sandbox (Debian: apt-get install bubblewrap). Without one the
grader refuses to run unless --unsafe-no-sandbox is given.
"""

from __future__ import annotations

import argparse
import signal
import sys
from dataclasses import replace
from pathlib import Path

from minigpt.exercises.registry import EXERCISES
from minigpt.grading.folder import UnsafeRefused, grade_folder
from minigpt.grading.grader import BUDGET_S
from minigpt.grading.notebook_code import SizeLimits
from minigpt.i18n import _, fmt_num


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minigpt.grading", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--exercise", required=True, choices=sorted(EXERCISES), help="which exercise notebook")
    parser.add_argument("--submissions", required=True, type=Path, help="folder of submitted .ipynb files")
    parser.add_argument("--out", required=True, type=Path, help="folder for the results")
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds allowed per notebook cell and per question (default 30)")
    parser.add_argument("--jobs", type=int, default=1, help="submissions graded at once (default 1)")
    parser.add_argument("--seed", type=int, default=None,
                        help="the class secret: each submission's inputs come from an HMAC of its bytes keyed with "
                             "it (default: a fresh 128-bit one, written to run.json; a shorter one can be recovered "
                             "from the feedback by brute force)")
    parser.add_argument("--budget", type=float, default=BUDGET_S,
                        help=f"hard wall-clock seconds per submission, all its cells, questions and sandbox runs "
                             f"together, whatever the notebook holds (default {BUDGET_S:g})")
    parser.add_argument("--max-notebook-mib", type=float, default=SizeLimits().notebook_bytes / 2**20,
                        help="largest notebook file graded; larger is 'submission too large' (default %(default)g)")
    parser.add_argument("--no-cgroups", action="store_true",
                        help="do not use control groups even where the machine offers them (rlimits only)")
    parser.add_argument("--unsafe-no-sandbox", action="store_true",
                        help="grade without the OS sandbox when bubblewrap is unavailable (student code can then "
                             "read and write everything the grader can)")
    args = parser.parse_args(argv)
    if not args.submissions.is_dir():
        parser.error(f"--submissions {args.submissions} is not a folder")
    if args.timeout <= 0:
        parser.error("--timeout must be > 0")
    if args.jobs < 1:
        parser.error("--jobs must be >= 1")
    if args.budget <= 0:
        parser.error("--budget must be > 0")
    if args.max_notebook_mib <= 0:
        parser.error("--max-notebook-mib must be > 0")
    size_limits = replace(SizeLimits(), notebook_bytes=int(args.max_notebook_mib * 2**20))
    try:
        results = grade_folder(args.exercise, args.submissions, args.out, timeout=args.timeout, seed=args.seed,
                               jobs=args.jobs, budget=args.budget, unsafe_no_sandbox=args.unsafe_no_sandbox,
                               size_limits=size_limits, use_cgroups=not args.no_cgroups)
    except UnsafeRefused as err:
        print(err, file=sys.stderr)
        return 2
    print(done_line(len(results), args.out / "scores.csv"))
    return 0


def done_line(n: int, scores: Path) -> str:
    """The last line of a run, in the language of ``MINIGPT_LANG``: how many submissions, where the scores are."""
    message = _("graded 1 submission; scores in {path}") if n == 1 else _("graded {n} submissions; scores in {path}")
    return message.format(n=fmt_num(n), path=scores)


if __name__ == "__main__":
    if hasattr(signal, "SIGPIPE"):  # `... | head` ends the listing quietly, as other command-line tools do
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main())
