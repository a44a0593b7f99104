"""R16.3's order of version tags: which of two writes is newer (R16.3 conflicts, R26's
superseded records, R32-R33's tag guard of conflation)."""

from __future__ import annotations

from model.state import Tag


def wins(incoming: Tag, current: Tag) -> bool:
    """R16.3: does an incoming tag win over (is it newer than) the current one?"""
    incoming_ev, incoming_ts, incoming_dsid = incoming
    current_ev, current_ts, current_dsid = current
    if incoming_dsid == current_dsid:
        return (incoming_ts, incoming_ev) > (current_ts, current_ev)
    return incoming_ts > current_ts or (incoming_ts == current_ts and incoming_dsid > current_dsid)
