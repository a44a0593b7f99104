"""Engines as a user would write them: modules of their own, outside this project."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIE_BREAK = "wins = entry.dsid > current.dsid"


def write_reversed_tie_break(folder: Path) -> str:
    """A user's engine in `folder`: a copy of impl/engine.py whose R16.3 tie-break (equal
    timestamps: the higher dsid wins) is reversed. Returns its --impl spec."""
    source = (ROOT / "impl" / "engine.py").read_text()
    assert source.count(TIE_BREAK) == 1
    (folder / "lowerdsid.py").write_text(source.replace(TIE_BREAK, TIE_BREAK.replace(">", "<")))
    return "lowerdsid:Engine"
