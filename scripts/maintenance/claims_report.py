"""`make claims-report`: what a maintainer should re-check in the claims ledger (`references/claims.yml`).

Prints the entries checked more than `max_age_days` ago (or `--days N`), oldest first, each with its
system, version, source and address; the statements not yet checked (`unchecked`), by page; and any
sentence that names a real system with neither a marker nor a line (the test fails on those).

    python scripts/maintenance/claims_report.py [--days N] [--today YYYY-MM-DD]
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "book"))
import claim_sentences  # noqa: E402

from minigpt.book.claims import load  # noqa: E402


def report(today: dt.date, days: int | None = None) -> str:
    ledger = load(claim_sentences.LEDGER)
    age = ledger.max_age_days if days is None else days
    old = ledger.stale(today, age)
    lines = [f"claims ledger: {len(ledger.claims)} entries, {len(ledger.mentions)} mentions, "
             f"{len(ledger.unchecked)} statements not yet checked", "",
             f"entries checked more than {age} days before {today.isoformat()}: {len(old)}"]
    lines += [f"  {c.checked.isoformat()}  {c.id}  ({c.system} {c.version})  {c.source}  {c.url}" for c in old]
    lines += ["", "not yet checked, by page:"]
    lines += [f"  {n:3d}  {page}" for page, n in sorted(Counter(u["page"] for u in ledger.unchecked).items())]
    missing = claim_sentences.unaccounted(ledger, claim_sentences.naming(ledger))
    lines += ["", f"sentences with no marker and no line (tests/test_claims.py fails): {len(missing)}"]
    lines += [f"  {s.page} {s.where}: {s.text[:120]}" for s in missing]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--days", type=int, default=None, help="age in days (default: the ledger's max_age_days)")
    parser.add_argument("--today", type=dt.date.fromisoformat, default=dt.date.today(), help="YYYY-MM-DD")
    args = parser.parse_args()
    if args.days is not None and args.days < 0:
        parser.error(f"--days must be >= 0, got {args.days}")
    print(report(args.today, args.days))


if __name__ == "__main__":
    main()
