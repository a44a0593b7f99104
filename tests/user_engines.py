"""Engines as a user would write them: modules of their own, outside this project."""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TIE_BREAK = "wins = entry.dsid > current.dsid"


def write_reversed_tie_break(folder: Path) -> str:
    """A user's engine in `folder`: a copy of impl/engine.py whose R16.3 tie-break (equal
    timestamps: the higher dsid wins) is reversed. Returns its --impl spec."""
    source = (ROOT / "impl" / "engine.py").read_text()
    assert source.count(TIE_BREAK) == 1
    (folder / "lowerdsid.py").write_text(source.replace(TIE_BREAK, TIE_BREAK.replace(">", "<")))
    return "lowerdsid:Engine"


def ignores_acks() -> type:
    """A user's engine that takes each ack from the network and never processes it (R18):
    its batches stay in flight, time out (R20) and go again, for ever."""
    from impl import Engine as Impl

    class IgnoresAcks(Impl):
        def _deliver_ack(self, op: Any, out: list[Any]) -> bool:
            sender = self._senders[op.sender]
            dispatcher = sender.dispatchers[op.dispatcher]
            if dispatcher.ack_message is None or not sender.home.up:
                return False
            dispatcher.ack_message = None  # taken from the network, never processed
            return True

    return IgnoresAcks


def changes_directory() -> type:
    """A user's engine whose constructor changes the current directory (to its parent):
    relative paths the command opens after it would name other files."""
    import os

    from impl import Engine as Impl

    class ChangesDirectory(Impl):
        def __init__(self, config: Any) -> None:
            super().__init__(config)
            os.chdir(os.path.dirname(os.getcwd()))

    return ChangesDirectory


ChangesDirectory = changes_directory()


def forgets_dead_letters() -> type:
    """A user's engine with a durable dead-letter store (`--dlq-dir`) whose observed state
    shows no dead letters (R24): it differs from the model's in state alone, once a
    failed event is dead-lettered."""
    from impl import Engine as Impl

    class ForgetsDeadLetters(Impl):
        def __init__(self, config: Any, dlq_dir: str | None = None) -> None:
            super().__init__(config, dlq_dir=dlq_dir)

        def observe(self) -> dict[str, Any]:
            state = super().observe()
            for sender in state["senders"].values():
                sender["dlq"] = []
            return state

    return ForgetsDeadLetters


ForgetsDeadLetters = forgets_dead_letters()
