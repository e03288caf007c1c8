"""Grading a class: every notebook of a folder of submissions, each in its own sandbox, `jobs` at a time.

`grade_folder` draws the class's seed, stages one sandbox runtime (`minigpt.grading.staging`), sets up the
per-run control groups and the seccomp filter where the machine has them, grades each submission with
`grade_notebook`, and writes the results as each one finishes: ``progress.jsonl`` appended and fsynced,
each submission's ``results.json`` and the class tables replaced atomically (`minigpt.grading.results`).

Names: each submission's slug (its row in the tables, its folder under ``results/``, its log) is unique by
construction (`slugs`): a name that is already safe and cannot be mistaken for a hashed one is kept, any
other becomes its safe form plus a hash of its path; a collision left after that is reported and both
submissions refused rather than one overwriting the other. Every slug is checked to stay inside the output
folder. A submission that is a symbolic link (or under one) is graded only if it resolves to a regular file
inside the class folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

import minigpt
from minigpt.exercises.registry import exercise as get_exercise
from minigpt.grading import cgroups, sandbox, seccomp, staging
from minigpt.grading.cases import SECRET_BITS, submission_seed
from minigpt.grading.child_command import Isolation
from minigpt.grading.fingerprints import package_fingerprints
from minigpt.grading.grader import BUDGET_S, grade_notebook, read_submission
from minigpt.grading.notebook_code import DEFAULT_SIZES, SizeLimits
from minigpt.grading.results import SubmissionResult, TestResult, atomic_write, write_tables
from minigpt.grading.review import Finding
from minigpt.i18n import _

_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")
_HASHED = re.compile(r".*-[0-9a-f]{10}")


class UnsafeRefused(RuntimeError):
    """No OS sandbox is available and the instructor did not ask to grade without one."""


def find_submissions(folder: Path) -> list[Path]:
    """Notebooks directly in `folder` or one level down (one folder per student), sorted (links included: see
    `refusal`)."""
    found = [*folder.glob("*.ipynb"), *folder.glob("*/*.ipynb")]
    return sorted(p for p in found if ".ipynb_checkpoints" not in p.parts)


def copies_of(folder: Path, paths: list[Path], names: list[str]) -> dict[str, list[Finding]]:
    """For the instructor's review: submissions whose bytes are another's, and links to another submission of
    the class folder (graded, but a copy made that easy should be seen). Only the file's bytes are hashed."""
    by_hash: dict[str, list[str]] = {}
    real: dict[Path, str] = {}
    flags: dict[str, list[Finding]] = {}
    for path, slug in zip(paths, names, strict=True):
        try:
            if not path.is_symlink():
                real[path.resolve()] = slug
            data = read_submission(path, SizeLimits(notebook_bytes=DEFAULT_SIZES.notebook_bytes))
        except (OSError, ValueError):
            continue
        by_hash.setdefault(hashlib.sha256(data).hexdigest(), []).append(slug)
    for path, slug in zip(paths, names, strict=True):
        if path.is_symlink() and path.resolve() in real:
            flags.setdefault(slug, []).append(Finding(0, 0, "copy", f"a link to {real[path.resolve()]}'s file"))
    for same in by_hash.values():
        for slug in same:
            others = [o for o in same if o != slug]
            if others:
                flags.setdefault(slug, []).append(Finding(0, 0, "copy", f"the same bytes as {', '.join(others)}"[:80]))
    return flags


def refusal(folder: Path, path: Path) -> str | None:
    """Why `path` is not graded (a link to something outside the class folder, not a regular file), or None."""
    root = folder.resolve()
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return _("refused: the submission is a broken link")
    if real != root and root not in real.parents:
        return _("refused: the submission is a link to a file outside the class folder")
    if not real.is_file():
        return _("refused: the submission is not a regular file")
    return None


def slugs(folder: Path, paths: list[Path]) -> tuple[list[str], list[str]]:
    """A unique, safe slug per submission, and the collisions found (each naming the paths involved)."""
    rels = [p.relative_to(folder).with_suffix("").as_posix() for p in paths]
    out = []
    for rel in rels:
        if _SAFE.fullmatch(rel) and not _HASHED.fullmatch(rel) and rel not in (".", ".."):
            out.append(rel)
        else:
            readable = re.sub(r"[^A-Za-z0-9._-]+", "_", rel.replace("/", "__")).strip("._-")[:60] or "submission"
            out.append(f"{readable}-{hashlib.sha256(rel.encode('utf-8', 'surrogateescape')).hexdigest()[:10]}")
    seen: dict[str, list[str]] = {}
    for slug, rel in zip(out, rels, strict=True):
        seen.setdefault(slug.lower(), []).append(rel)
    collisions = [f"{slug}: {', '.join(names)}" for slug, names in seen.items() if len(names) > 1]
    return out, collisions


def isolation_for(root: Path, *, unsafe_no_sandbox: bool = False, limits: sandbox.Limits | None = None,
                  use_cgroups: bool = True) -> tuple[Isolation, dict[str, str]]:
    """Stage the sandbox's runtime under `root` and set up the limits; UnsafeRefused when bwrap cannot run and no
    unsafe grading was asked. Also returns what was set up, in words (for ``run.json``)."""
    problem = sandbox.unavailable()
    if problem and not unsafe_no_sandbox:
        raise UnsafeRefused(f"refusing to grade: {problem}. Without an OS sandbox a submission can read the "
                            "reference solutions, other students' notebooks and results, and rewrite the scores.")
    unsafe = bool(problem) or unsafe_no_sandbox
    backend, how = cgroups.detect() if use_cgroups else (None, "control groups not asked for; rlimits only")
    program = None if unsafe else seccomp.program()
    notes = {"limits": how, "seccomp": ("filter installed by bwrap (" + ", ".join(seccomp.denied_names()[:6])
                                          + ", ... clone with namespace flags)") if program else
             "no seccomp filter (" + ("no sandbox" if unsafe else "not built for this architecture") + ")"}
    if backend is None:
        notes["memory_outside_address_space"] = (
            "not bounded: without control groups a submission's memfd and /dev/shm memory escape RLIMIT_AS "
            "(3 GiB of the host's shared memory was taken that way); only the sandbox's 64 MiB /tmp is bounded")
    isolation = Isolation(staging.stage(root), limits or sandbox.Limits(), unsafe=unsafe, cgroups=backend,
                          seccomp=program)
    return isolation, notes


def grade_folder(exercise_id: str, submissions: Path, out: Path, *, timeout: float = 30.0,
                 seed: int | None = None, jobs: int = 1, echo: bool = True, unsafe_no_sandbox: bool = False,
                 budget: float = BUDGET_S, limits: sandbox.Limits | None = None,
                 size_limits: SizeLimits = DEFAULT_SIZES, use_cgroups: bool = True,
                 ) -> list[tuple[str, SubmissionResult]]:
    """Grade every notebook in `submissions` for `exercise_id`; write results under `out`; return them.

    Each submission runs in its own sandbox (UnsafeRefused if bubblewrap is unavailable, unless
    `unsafe_no_sandbox`); `jobs` submissions are graded at once; `budget` caps one submission's wall clock
    (all its runs together). Results are written as each one finishes, in submission order in the tables.
    """
    get_exercise(exercise_id)
    seed = secrets.randbits(SECRET_BITS) | 1 << (SECRET_BITS - 1) if seed is None else seed  # always 128 bits long
    submission_seed(seed, b"")  # a ValueError now, naming the seed, rather than one per submission
    stage_root = Path(tempfile.mkdtemp(prefix="minigpt-sandbox-"))
    os.chmod(stage_root, 0o755)  # bwrap may run as uid 65534, which must reach the staged runtime (read-only)
    isolation = None
    try:
        isolation, notes = isolation_for(stage_root / "runtime", unsafe_no_sandbox=unsafe_no_sandbox, limits=limits,
                                         use_cgroups=use_cgroups)
        return _grade_all(exercise_id, seed, isolation, notes, submissions, out, timeout, jobs, echo, budget,
                          size_limits)
    finally:
        if isolation is not None and isolation.cgroups is not None:
            isolation.cgroups.close()
        shutil.rmtree(stage_root, ignore_errors=True)


def _refused(exercise_id: str, slug: str, reason: str) -> SubmissionResult:
    ex = get_exercise(exercise_id)
    return SubmissionResult(slug, [TestResult(f"{q.id}: {q.signature}", 0.0, q.points, reason) for q in ex.questions],
                            0.0, [reason])


def _grade_all(exercise_id: str, seed: int, isolation: Isolation, notes: dict[str, str], submissions: Path, out: Path,
               timeout: float, jobs: int, echo: bool, budget: float, size_limits: SizeLimits,
               ) -> list[tuple[str, SubmissionResult]]:
    ex = get_exercise(exercise_id)
    out.mkdir(parents=True, exist_ok=True)
    for sub in ("logs", "results"):
        (out / sub).mkdir(exist_ok=True)
    paths = find_submissions(submissions)
    names, collisions = slugs(submissions, paths)
    atomic_write(out / "run.json", json.dumps({
        "exercise": ex.id, "seed": seed, "timeout": timeout, "budget": budget, "sandbox": not isolation.unsafe,
        "minigpt": minigpt.__version__, "size_limits": vars(size_limits), "collisions": collisions,
        "cases": "each submission's cases are drawn from HMAC-SHA256(seed, notebook) (grader.submission_seed); keep "
                 "the seed secret: with it, every hidden case of every student can be computed",
        **({"weak_seed": f"the seed has {seed.bit_length()} bits; one under {SECRET_BITS} can be recovered from the "
                         "cases a student's feedback shows"} if seed.bit_length() < SECRET_BITS - 8 else {}),
        **notes}, indent=1))
    colliding = {s.lower() for c in collisions for s in [c.split(":")[0]]}
    copies = copies_of(submissions, paths, names)
    package_fingerprints()  # parsed once, before the grading threads (the review's copies of package code)
    done: dict[str, SubmissionResult] = {}
    lock = threading.Lock()
    results_root = (out / "results").resolve()

    def grade(path: Path, slug: str) -> None:
        folder = (out / "results" / slug)
        if folder.resolve().parent != results_root:  # never outside the output folder, whatever the name
            raise RuntimeError(f"slug {slug!r} leaves the output folder")
        reason = refusal(submissions, path)
        if slug.lower() in colliding:
            reason = _("refused: two submissions have the same name once made safe; rename one and grade again")
        if reason:
            result = _refused(exercise_id, slug, reason)
        else:
            log_path = out / "logs" / f"{slug}.txt"
            log_path.write_bytes(b"")
            result = grade_notebook(path.resolve(), exercise_id, seed, isolation, timeout=timeout, log_path=log_path,
                                    budget=budget, size_limits=size_limits, name=slug)
        result.submission = slug
        result.findings = [*copies.get(slug, []), *result.findings]
        folder.mkdir(exist_ok=True)
        atomic_write(folder / "results.json", json.dumps(result.gradescope(), indent=1))
        with lock:
            done[slug] = result
            with open(out / "progress.jsonl", "a", encoding="utf-8") as progress:
                progress.write(json.dumps({"submission": slug, "score": result.score, "max_score": result.max_score,
                                           "seed": result.seed, "tests": [asdict(t) for t in result.tests]}) + "\n")
                progress.flush()
                os.fsync(progress.fileno())
            write_tables(out, ex, [(s, done[s]) for s in names if s in done])
            if echo:
                flagged = f", {len(result.findings)} finding(s) in review.csv" if result.findings else ""
                print(f"{slug}: {result.score:g}/{result.max_score:g} ({result.execution_time:.1f} s{flagged})",
                      flush=True)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for future in [pool.submit(grade, p, s) for p, s in zip(paths, names, strict=True)]:
            future.result()
    results = [(s, done[s]) for s in names]
    write_tables(out, ex, results)
    return results
