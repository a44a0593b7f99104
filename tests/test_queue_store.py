"""The durable queue store (impl/queue_store.py, docs/QUEUE_STORE.md): records, slots and
updates survive a reopen and a compaction, a torn tail is cut with a notice, damage
before it is an error naming the file and the byte offset."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from impl.framing import HEADER, frame
from impl.queue_store import (
    MAGIC,
    QueueLog,
    StoreError,
    _add_frame,
    open_queue_store,
    queue_file,
)


def event(number: int) -> dict[str, Any]:
    return {"id": f"1:{number}", "key": f"k{number}", "op": "create", "value": {"v": number},
            "version": [1, number, 1], "possible_duplicate": False}  # fmt: skip


def open_log(folder: Path, notices: list[str] | None = None, **options: Any) -> QueueLog:
    fsync = options.pop("fsync", "batch")
    sink = notices.append if notices is not None else print
    return open_queue_store(folder, [("ny", 0)], sink, fsync, **options)["ny", 0]


def test_round_trip_across_a_reopen(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    assert log.append([event(1), event(2), event(3)]) == [1, 2, 3]
    log.update(2, {"possible_duplicate": True})
    log.remove([1])
    log.sync()
    expected = [(2, event(2) | {"possible_duplicate": True}), (3, event(3))]
    assert log.read_back() == expected
    log.close()
    again = open_log(tmp_path)
    assert again.read_back() == expected and len(again) == 2
    assert again.append([event(4)]) == [4]  # slots go on after the reopen
    again.update(4, {"converted": True})
    assert again.read_back() == [*expected, (4, event(4) | {"converted": True})]
    again.close()


def test_append_one_is_append_of_one_record_byte_for_byte(tmp_path: Path) -> None:
    # the engine appends one event at a time (`append_one`): the same frames, slots, live
    # bytes (so compactions at the same steps) as `append([record])`, after every step;
    # a non-dict is refused before anything is written
    one, many = tmp_path / "one", tmp_path / "many"
    log, other = open_log(one, compact_above=0), open_log(many, compact_above=0)

    def same() -> None:
        log.flush()
        other.flush()
        assert (one / "ny.0.queue").read_bytes() == (many / "ny.0.queue").read_bytes()

    for n in (1, 2, 3):
        assert log.append_one(event(n)) == other.append([event(n)])[0] == n
        same()
    for slots in ([2], [1]):  # 1 of 3 dead: kept; then 2 of 3: compacted
        log.remove(slots)
        other.remove(slots)
        same()
    assert (one / "ny.0.queue").read_bytes().endswith(b'{"next":4}')  # compacted
    size = (one / "ny.0.queue").stat().st_size
    with pytest.raises(TypeError, match="a queue record is a dict, got list"):
        log.append_one(["not", "a", "dict"])  # type: ignore[arg-type]
    assert (one / "ny.0.queue").stat().st_size == size
    assert log.append_one(event(4)) == other.append([event(4)])[0] == 4
    same()
    assert len(log) == len(other) == 2
    log.close()
    other.close()
    assert open_log(one).read_back() == [(3, event(3)), (4, event(4))]


def test_file_names_escape_the_sender_and_name_the_dispatcher(tmp_path: Path) -> None:
    logs = open_queue_store(tmp_path, [("ny/1", 0), ("ny/1", 1), ("ln", 0)], print, "none")
    assert queue_file("ny/1", 1) == "ny%2F1.1.queue"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "ln.0.queue",
        "ny%2F1.0.queue",
        "ny%2F1.1.queue",
    ]
    logs["ny/1", 1].append([event(1)])
    assert logs["ny/1", 0].read_back() == [] and logs["ln", 0].read_back() == []
    assert logs["ny/1", 1].read_back() == [(1, event(1))]
    for log in logs.values():
        log.close()


def test_a_removed_last_slot_is_not_reused_and_clear_keeps_the_count(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append([event(1), event(2)])
    log.remove([2])
    log.close()
    log = open_log(tmp_path)
    assert log.append([event(3)]) == [3]
    log.clear()
    assert log.read_back() == [] and len(log) == 0
    log.close()
    log = open_log(tmp_path)
    assert log.read_back() == []
    assert log.append([event(4)]) == [4]
    log.close()


def test_a_missing_folder_is_created(tmp_path: Path) -> None:
    folder = tmp_path / "a" / "b"
    log = open_log(folder)
    log.append([event(1)])
    log.close()
    assert [p.name for p in folder.iterdir()] == ["ny.0.queue"]
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError) as raised:
        open_log(tmp_path / "file")
    assert (
        str(raised.value) == f"{tmp_path / 'file'}: not a directory (a queue store is a directory)"
    )
    with pytest.raises(ValueError) as refused:  # the log itself refuses it too
        QueueLog(tmp_path / "x.queue", print, "always")
    assert str(refused.value) == "fsync: one of batch, none, got 'always'"


def test_torn_tail_is_cut_with_one_notice(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append([event(1), event(2)])
    log.close()
    path = tmp_path / "ny.0.queue"
    first = len(_add_frame(1, event(1)))
    whole = path.read_bytes()
    for cut in (first + 3, first + HEADER + 5, len(whole) - 1):  # mid header, mid payload
        path.write_bytes(whole[:cut])
        notices: list[str] = []
        log = open_log(tmp_path, notices)
        assert notices == [
            f"{path}: cut a torn tail of {cut - first} bytes at byte {first} (a crash mid-write)"
        ]
        assert path.stat().st_size == first
        assert log.read_back() == [(1, event(1))]
        assert log.append([event(5)]) == [2]  # the torn add never was: its slot is free
        log.close()
        assert open_log(tmp_path, notices).read_back() == [(1, event(1)), (2, event(5))]
        assert len(notices) == 1


def test_a_last_frame_whose_checksum_fails_is_cut(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append([event(1), event(2)])
    log.remove([1])
    log.close()
    path = tmp_path / "ny.0.queue"
    data = bytearray(path.read_bytes())
    data[-2] ^= 0x01  # a bit of the remove's payload
    path.write_bytes(bytes(data))
    notices: list[str] = []
    log = open_log(tmp_path, notices)
    remove = len(data) - 2 * len(_add_frame(1, event(1)))
    assert len(notices) == 1 and f"cut a torn tail of {remove} bytes" in notices[0]
    assert log.read_back() == [(1, event(1)), (2, event(2))]  # the remove never reached disk
    log.close()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: d[: HEADER + 3] + bytes([d[HEADER + 3] ^ 1]) + d[HEADER + 4 :],
         "byte 0: damaged frame (checksum mismatch)"),
        (lambda d: b"XXXX" + d[4:], "byte 0: not a queue frame (damaged or not a store file)"),
        (lambda d: d + _add_frame(1, event(9)),
         "damaged frame (an add at slot 1, not above the last (next 3))"),
    ],
)  # fmt: skip
def test_damage_before_the_tail_is_an_error_naming_file_and_offset(
    tmp_path: Path, damage: Any, message: str
) -> None:
    log = open_log(tmp_path)
    log.append([event(1), event(2)])
    log.close()
    path = tmp_path / "ny.0.queue"
    path.write_bytes(damage(path.read_bytes()))
    before = path.read_bytes()
    if "add at slot" in message:
        message = f"byte {2 * len(_add_frame(1, event(1)))}: " + message
    with pytest.raises(StoreError, match="^" + re.escape(f"{path}: {message}") + "$"):
        open_log(tmp_path)
    assert path.read_bytes() == before  # nothing changed on disk


def test_a_frame_naming_a_slot_not_live_is_damage(tmp_path: Path) -> None:
    path = tmp_path / "ny.0.queue"
    path.write_bytes(_add_frame(1, event(1)) + frame(MAGIC, b'{"remove":[7]}') + b"\0" * 20)
    offset = len(_add_frame(1, event(1)))
    with pytest.raises(StoreError, match=re.escape(f"byte {offset}: damaged frame (a remove")):
        open_log(tmp_path)


def test_compaction_keeps_order_slots_and_updates(tmp_path: Path) -> None:
    log = open_log(tmp_path, compact_above=0)
    path = tmp_path / "ny.0.queue"
    log.append([event(n) for n in range(1, 7)])
    log.update(4, {"possible_duplicate": True})
    log.remove([1, 2])  # 2 of 6 dead: not yet
    grown = path.stat().st_size
    log.remove([3, 5])  # 4 of 6 dead: compacted
    assert path.stat().st_size < grown / 2
    assert path.read_bytes().endswith(b'{"next":7}')  # the next slot, last
    expected = [(4, event(4) | {"possible_duplicate": True}), (6, event(6))]
    assert log.read_back() == expected
    assert log.append([event(7)]) == [7]  # appends go on in the new file
    log.remove([7])
    log.close()
    again = open_log(tmp_path)
    assert again.read_back() == expected
    assert again.append([event(8)]) == [8]  # the compacted file kept the next slot
    again.close()
    assert not list(tmp_path.glob("*.compacting"))


def test_an_unfinished_compaction_is_removed_and_the_file_kept(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append([event(1)])
    log.close()
    (tmp_path / "ny.0.queue.compacting").write_bytes(b"WQUE\0")
    notices: list[str] = []
    assert open_log(tmp_path, notices).read_back() == [(1, event(1))]
    assert notices == [f"{tmp_path / 'ny.0.queue.compacting'}: removed an unfinished compaction"]
    assert not (tmp_path / "ny.0.queue.compacting").exists()


def test_sync_fsyncs_only_what_was_written_and_none_never(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = os.fsync

    def counted(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", counted)
    batch = open_log(tmp_path / "b")
    calls.clear()  # creating the file fsynced the directories
    batch.append([event(1)])
    assert calls == []  # written to the OS, not yet fsynced
    batch.sync()
    batch.sync()  # nothing new
    assert len(calls) == 1
    batch.close()
    none = open_log(tmp_path / "n", fsync="none", compact_above=0)
    none.append([event(1), event(2), event(3)])
    none.sync()
    none.remove([1, 2])  # compacted, without fsync
    none.clear()
    none.close()
    assert len(calls) == 1
    assert open_log(tmp_path / "n", fsync="none").read_back() == []


def test_misuse_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="fsync: one of batch, none, got 'always'"):
        open_log(tmp_path, fsync="always")
    log = open_log(tmp_path)
    log.append([event(1)])
    size = (tmp_path / "ny.0.queue").stat().st_size
    with pytest.raises(ValueError, match="slot 2 is not live"):
        log.remove([1, 2])
    with pytest.raises(ValueError, match="slot 5 is not live"):
        log.update(5, {"converted": True})
    with pytest.raises(ValueError, match="removed twice"):
        log.remove([1, 1])
    with pytest.raises(TypeError, match="a queue record is a dict"):
        log.append([["not", "a", "dict"]])  # type: ignore[list-item]
    assert (tmp_path / "ny.0.queue").stat().st_size == size
    log.close()
    with pytest.raises(ValueError, match="closed"):
        log.append([event(2)])


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        (b"not json", "not JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "not JSON"),  # nested past any depth limit
        *[(p, "not an add, remove, update, clear or next")
          for p in (b"[]", b"{}", b'{"put":1}', b'{"add":[2,{}],"clear":true}')],
        *[(p, "an add that is not [SLOT, RECORD]")
          for p in (b'{"add":2}', b'{"add":[2]}', b'{"add":[2,{},3]}', b'{"add":[-1,{}]}',
                    b'{"add":[true,{}]}', b'{"add":[2.0,{}]}', b'{"add":["2",{}]}')],
        (b'{"add":[2,[1]]}', "an add whose record is not an object"),
        (b'{"add":[1,{}]}', "an add at slot 1, not above the last (next 2)"),
        (b'{"add":[0,{}]}', "an add at slot 0, not above the last (next 2)"),
        *[(p, "a remove that is not a list of slots")
          for p in (b'{"remove":1}', b'{"remove":[1,-1]}', b'{"remove":[true]}',
                    b'{"remove":{"1":1}}')],
        (b'{"remove":[2]}', "a remove of slot 2, not live"),
        (b'{"remove":[1,1]}', "a remove of slot 1, not live"),  # twice
        *[(p, "an update that is not [SLOT, FIELDS]")
          for p in (b'{"update":1}', b'{"update":[1]}', b'{"update":[1,[]]}',
                    b'{"update":[1,{},{}]}', b'{"update":{"1":{}}}')],
        (b'{"update":[2,{}]}', "an update of slot 2, not live"),
        (b'{"update":[-1,{}]}', "an update of slot -1, not live"),
        *[(p, "a clear that is not true")
          for p in (b'{"clear":false}', b'{"clear":1}', b'{"clear":null}')],
        (b'{"next":1}', "a next slot 1 below the last (next 2)"),
        (b'{"next":-1}', "a next slot -1 below the last (next 2)"),
    ],
)  # fmt: skip
def test_a_whole_frame_whose_payload_is_wrong_is_damage_even_last(
    tmp_path: Path, payload: bytes, why: str
) -> None:
    # docs/QUEUE_STORE.md, "Recovery": the table of what the parenthesis says
    path = tmp_path / "ny.0.queue"
    first = _add_frame(1, event(1))
    path.write_bytes(first + frame(MAGIC, payload))
    message = f"{path}: byte {len(first)}: damaged frame ({why})"
    with pytest.raises(StoreError) as raised:
        open_log(tmp_path)
    assert str(raised.value) == message
    assert path.read_bytes() == first + frame(MAGIC, payload)  # nothing changed on disk


def test_the_payloads_at_their_limits_are_whole_frames(tmp_path: Path) -> None:
    # docs/QUEUE_STORE.md: the next slot is one past the largest slot, or the `next`
    # frame's if larger (equal is no damage); an update merges its fields; a remove of no
    # slot and a clear of an empty queue are frames like any other
    path = tmp_path / "ny.0.queue"
    path.write_bytes(
        frame(MAGIC, b'{"remove":[]}')
        + frame(MAGIC, b'{"clear":true}')
        + frame(MAGIC, b'{"add":[1,{"a":1,"b":1}]}')
        + frame(MAGIC, b'{"update":[1,{"b":2,"c":3}]}')
        + frame(MAGIC, b'{"next":2}')  # equal to the next slot
        + frame(MAGIC, b'{"add":[3,{}]}')  # above it: slots 1 and 2 never were
        + frame(MAGIC, b'{"next":9}')
    )
    log = open_log(tmp_path)
    assert log.read_back() == [(1, {"a": 1, "b": 2, "c": 3}), (3, {})]
    assert log.append([event(9)]) == [9]
    log.close()


def test_a_buffered_log_writes_at_flush_and_before_sync_read_back_compaction_close(
    tmp_path: Path,
) -> None:
    # docs/QUEUE_STORE.md, "API": frames wait in memory until flush(); sync, read_back,
    # a compaction and close flush first
    path = tmp_path / "ny.0.queue"
    log = open_log(tmp_path, buffered=True, compact_above=0)
    assert log.append_one(event(1)) == 1 and log.append([event(2), event(3)]) == [2, 3]
    assert path.read_bytes() == b""
    log.flush()
    frames = b"".join(_add_frame(n, event(n)) for n in (1, 2, 3))
    assert path.read_bytes() == frames
    log.flush()  # nothing held back: nothing written
    assert path.read_bytes() == frames
    log.update(3, {"converted": True})
    assert path.read_bytes() == frames
    log.sync()
    assert len(path.read_bytes()) > len(frames)
    log.remove([1])  # 1 of 3 dead: not compacted, held back
    held = path.read_bytes()
    assert log.read_back() == [(2, event(2)), (3, event(3) | {"converted": True})]
    assert len(path.read_bytes()) > len(held)
    log.append_one(event(4))
    log.remove([2, 3])  # compacted: the held add of slot 4 is in the new file
    expected = _add_frame(4, event(4)) + frame(MAGIC, b'{"next":5}')
    assert path.read_bytes() == expected
    log.append_one(event(5))
    log.close()
    assert path.read_bytes() == expected + _add_frame(5, event(5))


def test_a_file_is_compacted_on_open_when_more_than_half_is_dead_above_the_floor(
    tmp_path: Path,
) -> None:
    # docs/QUEUE_STORE.md, "Compaction": above the floor and dead bytes more than half.
    # A live add of 52 bytes (12 of header, 40 of payload) against 52 dead (an add and a
    # remove of slot 2, 26 each): exactly half is dead, kept; one byte less live, compacted
    path = tmp_path / "ny.0.queue"
    dead = _add_frame(2, {}) + frame(MAGIC, b'{"remove":[2]}')
    assert len(dead) == 52
    for pad, compacted in ((20, False), (19, True)):
        live = _add_frame(1, {"k": "a" * pad})
        path.write_bytes(live + dead)
        open_log(tmp_path, compact_above=0).close()
        after = live + frame(MAGIC, b'{"next":3}') if compacted else live + dead
        assert path.read_bytes() == after
    size = len(live + dead)  # 103 bytes, 51 live: compacted only above the floor
    for floor, compacted in ((size, False), (size - 1, True)):
        path.write_bytes(live + dead)
        open_log(tmp_path, compact_above=floor).close()
        after = live + frame(MAGIC, b'{"next":3}') if compacted else live + dead
        assert path.read_bytes() == after


def test_clearing_every_record_compacts_to_the_next_slot_alone(tmp_path: Path) -> None:
    # docs/QUEUE_STORE.md, "Slots" and "Compaction": no live record, all dead: the file
    # becomes its `next` frame, and the count goes on
    path = tmp_path / "ny.0.queue"
    log = open_log(tmp_path, compact_above=0)
    log.append([event(1), event(2)])
    log.clear()
    assert path.read_bytes() == frame(MAGIC, b'{"next":3}') and len(log) == 0
    assert log.append_one(event(3)) == 3
    log.close()


def test_a_closed_log_refuses_every_write_and_a_file_torn_while_open_is_named(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ny.0.queue"
    log = open_log(tmp_path)
    log.append([event(1)])
    with path.open("ab") as handle:  # another writer tears the file under the log
        handle.write(b"WQUE\0")
    with pytest.raises(
        StoreError,
        match="^"
        + re.escape(f"{path}: byte {len(_add_frame(1, event(1)))}: torn while open")
        + "$",
    ):
        log.read_back()
    log.close()
    log.close()  # twice is no error
    log.sync()  # nothing to do
    for write in (lambda: log.append_one(event(2)), lambda: log.remove([1]),
                  lambda: log.update(1, {"converted": True}), log.clear, log.compact):  # fmt: skip
        with pytest.raises(
            ValueError, match="^" + re.escape(f"{path}: the queue log is closed") + "$"
        ):
            write()


def test_open_refuses_a_queue_named_twice_and_a_folder_it_cannot_create(
    tmp_path: Path,
) -> None:
    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    before = open_fds()
    with pytest.raises(ValueError, match="^" + re.escape("queue ('ny', 0) named twice") + "$"):
        open_queue_store(tmp_path, [("ny", 0), ("ny", 1), ("ny", 0)], print, "none")
    assert open_fds() == before  # the logs opened before it are closed
    with pytest.raises(ValueError, match="fsync: one of batch, none, got 'always'"):
        open_queue_store(tmp_path / "new", [("ny", 0)], print, "always")
    assert not (tmp_path / "new").exists()  # refused before anything is created
    (tmp_path / "file").write_text("x")
    with pytest.raises(
        StoreError,
        match="^"
        + re.escape(f"{tmp_path / 'file' / 'q'}: cannot create it: Not a directory")
        + "$",
    ):
        open_queue_store(tmp_path / "file" / "q", [("ny", 0)], print, "batch")
