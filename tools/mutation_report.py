"""The score of `make mutation`: mutmut's verdicts on impl/'s mutants, less the equivalents.

Run after `mutmut run` in the project root (`make mutation` does both):
`python -m tools.mutation_report [--min-score 95]`. It reads every checked mutant's
verdict (`mutmut results --all true`), takes out the mutants listed as equivalent in
`tools/mutation-equivalents.txt` (one `name  # why` a line: a mutant that changes
no observable behaviour, with the one-line argument), and writes `out/mutation/report.txt`:
the score (killed / non-equivalent mutants checked), then each surviving mutant with its
diff. A timeout counts as killed (the mutant never finishes); "no tests" counts as
survived. Exit status 1 if the score is below `--min-score`.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

from traces.outputs import write_text_atomically
from wanconform.options import StrictParser

EQUIVALENTS = Path(__file__).with_name("mutation-equivalents.txt")
REPORT = Path("out/mutation/report.txt")
KILLED = ("killed", "timeout", "caught by type check", "segfault")
UNCHECKED = ("not checked", "skipped")


def mutmut(*args: str) -> str:
    """mutmut's output, run from this interpreter's environment."""
    mutmut_bin = Path(sys.executable).with_name("mutmut")
    done = subprocess.run(
        [str(mutmut_bin), *args], check=True, capture_output=True, text=True, encoding="utf-8"
    )
    return done.stdout


def verdicts(text: str) -> dict[str, str]:
    """`name: status` lines of `mutmut results --all true` -> {name: status}."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and name.startswith("impl."):
            found[name] = status
    return found


def equivalents(path: Path = EQUIVALENTS) -> dict[str, str]:
    """The listed equivalent mutants: {name: the one-line argument}."""
    listed: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, _, why = line.partition("#")
        listed[name.strip()] = why.strip()
    return listed


def report(results: dict[str, str], listed: dict[str, str]) -> tuple[float, list[str], str]:
    """The score in percent, the non-equivalent survivors, and the report's summary.

    A listed mutant that was killed after all is scored as killed and named as stale.
    """
    checked = {name: status for name, status in results.items() if status not in UNCHECKED}
    stale = sorted(name for name, status in checked.items() if name in listed and status in KILLED)
    equivalent = sorted(name for name in checked if name in listed and name not in stale)
    counted = {name: status for name, status in checked.items() if name not in equivalent}
    killed = sum(status in KILLED for status in counted.values())
    survivors = sorted(name for name, status in counted.items() if status not in KILLED)
    score = 100.0 * killed / len(counted) if counted else 100.0
    statuses = Counter(checked.values())
    summary = (
        f"mutants checked: {len(checked)} "
        f"({', '.join(f'{n} {s}' for s, n in sorted(statuses.items()))})\n"
        f"listed as equivalent ({EQUIVALENTS.name}): {len(equivalent)}\n"
        f"score: {killed} of {len(counted)} non-equivalent mutants killed = {score:.1f}%\n"
        f"surviving non-equivalent mutants: {len(survivors)}\n"
    )
    if stale:
        summary += f"listed as equivalent but killed (take them off the list): {', '.join(stale)}\n"
    return score, survivors, summary


def main(argv: list[str] | None = None) -> int:
    parser = StrictParser(prog="python -m tools.mutation_report")
    parser.add_argument("--min-score", type=float, default=95.0)
    args = parser.parse_args(argv)
    results = verdicts(mutmut("results", "--all", "true"))
    if all(status in UNCHECKED for status in results.values()):  # not 0 of 0 = 100%
        print("mutation_report: no mutant checked: run `make mutation` first", file=sys.stderr)
        return 2
    score, survivors, summary = report(results, equivalents())
    diffs = [f"--- {name}\n{mutmut('show', name).strip()}\n" for name in survivors]
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(REPORT, summary + "\n" + "\n".join(diffs))
    print(summary + f"report written to {REPORT}", end="\n")
    return 0 if score >= args.min_score else 1


if __name__ == "__main__":
    raise SystemExit(main())
