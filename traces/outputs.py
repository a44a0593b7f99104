"""Outputs: checked before the work starts, then written whole or not at all.

Every file or directory a command writes goes through here:

- `check_outputs(args)` runs before a command's work (`wanconform.cli.main`): each output
  the command declares (`declare_outputs`) must be writable -- its folder exists and takes
  a new file (a probe file is made and removed, which also refuses /proc, a read-only
  disk, and a "folder" that is a file), an output file is a regular file or absent, an
  output directory is absent, empty, or one wanconform wrote (`output_kind`), and one
  wanconform wrote is replaced only with `--force`, and only while it holds nothing but
  what wanconform wrote there, unchanged (its `.wanconform-contents.json` lists each
  file's SHA-256): a result is never lost silently.
  An existing output file is replaced only with `--force` too, and only if wanconform
  wrote it and it has not changed since: each folder wanconform writes an output file
  into keeps a ledger, `.wanconform-written.json`, of those files' names and SHA-256
  digests (entered by `atomic_file` for the outputs `check_outputs` was given).
  An output that pyarrow writes (Parquet, on Spark: `declare_outputs(arrow=...)`) must
  have a UTF-8 path (`check_arrow_path`): pyarrow cannot encode any other.
- `atomic_file(path)` / `write_text_atomically`: a temporary file in the same folder,
  renamed over the target when complete.
- `building_directory(path)`: a temporary directory next to the target, renamed into place
  when complete; any failure or interruption (Ctrl-C, an error) removes it.

A process killed outright (SIGKILL) leaves at most a hidden `.NAME.*.tmp` beside the
target, never a partial target; the next write of that target removes such leftovers of
dead processes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from traces.errors import WanconformError
from traces.text import printable

# What marks a directory wanconform wrote, and what it is called in messages.
TRACE_SET_MARKER = "wanconform-traces.json"
JSONL_MARKER = "wanconform-jsonl.json"
RESULTS_FILE = "results.parquet"
CAMPAIGN_MARKER = "campaign.json"
EXPLORE_MARKER = "explore.json"
LIVE_MARKER = "live.json"
KINDS = (
    (LIVE_MARKER, "a live run's event logs"),
    (EXPLORE_MARKER, "an exploration"),
    (CAMPAIGN_MARKER, "a campaign"),
    (TRACE_SET_MARKER, "a trace set"),
    (JSONL_MARKER, "a directory of JSON Lines traces"),
    (RESULTS_FILE, "a results directory"),
)
CONTENTS = ".wanconform-contents.json"
"""In each output directory: {path inside it: SHA-256} of every file it was published
with (`publish_directory`): the same for the same contents, as every output is."""
_PROBE = ".wanconform-probe-"
_LEFTOVER = re.compile(r"\.(?P<name>.+)\.(?P<pid>\d+)\.[^.]*\.tmp")


def unfinished(path: Path) -> bool:
    """Whether `path` is an output still being built (`.NAME.PID.*.tmp`, beside NAME): by
    a command that runs, or that was killed before it finished."""
    return _LEFTOVER.fullmatch(path.name) is not None


def output_kind(directory: Path) -> str | None:
    """What wanconform output `directory` is ("a trace set"), or None."""
    for marker, kind in KINDS:
        if (directory / marker).exists():
            return kind
    return None


def _contents(directory: Path) -> dict[str, str]:
    """Every file under `directory` (but its `CONTENTS`): its SHA-256."""
    files = {}
    for path in directory.rglob("*"):
        if path.is_file() and not path.is_symlink():
            files[path.relative_to(directory).as_posix()] = _digest(path)
    files.pop(CONTENTS, None)
    return files


def _foreign(directory: Path) -> str | None:
    """The first file in an earlier output directory that wanconform did not write there
    or that changed since, or None. A file wanconform wrote there later as an output file
    of its own (a report into a campaign's directory: `wrote`) is wanconform's too. (An
    output published before directories listed their contents, on 2026-11-27, has only
    its marker to go by: None.)"""
    try:
        listed = json.loads((directory / CONTENTS).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return CONTENTS
    if not isinstance(listed, dict):
        return CONTENTS
    for name, digest in sorted(_contents(directory).items()):
        if listed.get(name) != digest:
            path = directory / name
            if path.name == LEDGER or wrote(path):
                continue
            return name
    return None


DLQ_SUFFIX = ".dlq"
"""A dead-letter store's files (`impl.dlq_store`, docs/DLQ_STORE.md), one per sender."""
QUEUE_SUFFIX = ".queue"
"""A queue store's files (`impl.queue_store`), one per sender's dispatcher."""
_STORE_SUFFIXES = (DLQ_SUFFIX, QUEUE_SUFFIX)


def _kept(directory: Path) -> bool:
    """Is `directory` one whose files wanconform reads back as a whole: one of its
    outputs (a trace set, a campaign, a live run ...), or a dead-letter or queue store?"""
    if not directory.is_dir():
        return False
    if output_kind(directory) is not None:
        return True
    return any(path.suffix in _STORE_SUFFIXES for path in directory.iterdir())


def _fail(path: str | os.PathLike[str], why: str) -> WanconformError:
    return WanconformError(f"{os.fspath(path)}: cannot write: {why}")


def _probe(folder: Path, target: str | os.PathLike[str]) -> None:
    """Make and remove a file in `folder`: the one sure test that it takes new files."""
    try:
        fd, name = tempfile.mkstemp(dir=folder, prefix=_PROBE)
    except FileNotFoundError:  # /proc, /sys: folders that take no new files
        raise _fail(target, f"{folder} takes no new files") from None
    except OSError as exc:
        raise _fail(target, exc.strerror or str(exc)) from None
    os.close(fd)
    os.unlink(name)


def _existing_folder(path: Path, create: bool, shown: str | os.PathLike[str]) -> Path:
    """The folder an output goes into, checked: it must exist, or, for a directory
    output (`create`), its nearest existing ancestor must be a folder (the rest is made
    when the output is written)."""
    for candidate in path.parents:
        if not candidate.exists():
            continue
        if not candidate.is_dir():
            raise _fail(shown, f"{candidate} is a file, not a folder")
        if candidate != path.parent and not create:
            raise _fail(shown, f"no such folder {path.parent}")
        return candidate
    raise _fail(shown, f"no such folder {path.parent}")


def _not_a_directory(path: str | os.PathLike[str], target: Path) -> None:
    """An output file asked for at a folder: that is what is wrong (said before any
    input it may hold)."""
    if target.is_dir():
        raise WanconformError(f"{os.fspath(path)}: is a directory; give a file name")


def check_output_file(path: str | os.PathLike[str], force: bool = False) -> None:
    """An output file can be written (before any work): absent, or one wanconform wrote
    (unchanged since) that `force` allows to replace; one line if not."""
    target = Path(os.path.abspath(path))
    _not_a_directory(path, target)
    if target.exists() and not target.is_file():
        raise _fail(path, "not a regular file")
    if target.exists() and not force:
        raise WanconformError(
            f"{os.fspath(path)}: exists; give --force to replace it (only a file wanconform "
            "wrote), or choose another file"
        )
    if target.exists() and not wrote(target):
        raise WanconformError(
            f"{os.fspath(path)}: exists and is not a file wanconform wrote (or it changed "
            "since); choose another file"
        )
    _probe(_existing_folder(target, create=False, shown=path), path)


# -- the ledger of the output files wanconform wrote ---------------------------------------

LEDGER = ".wanconform-written.json"
"""In each folder that holds an output file wanconform wrote: {file name: [SHA-256]}."""

_DECLARED: set[Path] = set()
"""The output files of this command (`check_outputs`): `atomic_file` enters them."""


def _digest(path: Path) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def _ledger(folder: Path) -> dict[str, list[str]]:
    """A folder's ledger; {} if it has none or it is unreadable (then nothing is known to
    be wanconform's, which refuses a replacement: the safe side)."""
    try:
        entries = json.loads((folder / LEDGER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(entries, dict):
        return {}
    return {
        str(name): [str(d) for d in digests]
        for name, digests in entries.items()
        if isinstance(digests, list)
    }


def wrote(path: Path) -> bool:
    """Did wanconform write the file at `path`, as it is now?"""
    return _digest(path) in _ledger(path.parent).get(path.name, [])


def _enter(target: Path, digests: list[str]) -> None:
    """Set `target`'s digests in its folder's ledger (whole or not at all, as any file)."""
    entries = _ledger(target.parent)
    entries[target.name] = digests
    text = json.dumps(entries, sort_keys=True, indent=0) + "\n"
    with atomic_file(target.parent / LEDGER, declared=False) as temporary:
        temporary.write_text(text, encoding="utf-8")


def check_output_directory(path: str | os.PathLike[str], force: bool = False) -> None:
    """An output directory can be written (before any work): absent, empty, or an
    earlier wanconform output that `force` allows to replace; one line if not."""
    target = Path(os.path.abspath(path))
    for parent in target.parents:  # its files would be foreign there: never replaceable
        if (outer := output_kind(parent)) is not None:
            raise WanconformError(
                f"{os.fspath(path)}: is inside {parent}, {outer} wanconform wrote; give the "
                "output a path of its own"
            )
    if target.exists():
        if not target.is_dir():
            raise WanconformError(f"{os.fspath(path)}: exists and is not a directory")
        kind = output_kind(target)
        if kind is None and any(target.iterdir()):
            raise WanconformError(
                f"{os.fspath(path)}: exists and is not a wanconform output; choose another "
                "directory"
            )
        if kind is not None and not force:
            raise WanconformError(
                f"{os.fspath(path)}: holds {kind} written earlier; give --force to replace "
                "it, or choose another directory"
            )
        foreign = None if kind is None else _foreign(target)
        if foreign is not None:
            raise WanconformError(
                f"{os.fspath(path)}: holds {kind} written earlier, and {foreign}, which "
                "wanconform did not write there (or which changed since): --force replaces "
                "only what wanconform wrote; choose another directory"
            )
    _probe(_existing_folder(target, create=True, shown=path), path)


def check_arrow_path(path: str | os.PathLike[str], verb: str = "write") -> None:
    """A path pyarrow (Parquet, Spark) is to `verb` ("write", "read"): its absolute form
    must be UTF-8 (a byte that is not, such as 0xff, is a surrogate escape in Python, which
    pyarrow cannot encode: a traceback deep in the work). One line naming it if not (the
    path as given, or its absolute form when only the current folder's name is at fault)."""
    given = os.fspath(path)
    for shown in (given, os.path.abspath(given)):
        try:
            shown.encode("utf-8")
        except UnicodeEncodeError:
            raise WanconformError(
                f"{shown}: cannot {verb}: the path is not UTF-8, and Parquet (pyarrow) takes "
                "only UTF-8 paths; rename it or choose another path"
            ) from None


# -- declaring a command's outputs ---------------------------------------------------------


def declare_outputs(
    parser: argparse.ArgumentParser,
    files: Sequence[str] = (),
    directories: Sequence[str] = (),
    stdout: Sequence[str] = (),
    inputs: Sequence[str] = (),
    arrow: Sequence[str] = (),
    sites: Sequence[str] = (),
    stores: Sequence[str] = (),
) -> None:
    """Name the arguments (their `dest`) that are output files or directories, so that
    `check_outputs` checks them before the command runs; directories get `--force`.
    `stdout`: the files for which "-" means standard output (for any other output, "-"
    is refused: `./-` names a file of that name). `inputs`: the arguments that name input
    paths (one or a list), which no output may be or hold (replacing it would destroy the
    input); `sites`: the same for arguments of `[DSID=]FILE[,FILE...]` values (`--site`),
    whose every FILE is an input. `stores`: the directories the command writes in place
    (`--dlq-dir`, `--queue-dir`: durable, never replaced), which no output may be or lie
    inside. `--force` is refused when none of the outputs is given
    (`check_outputs`): it would replace nothing."""
    parser.set_defaults(
        output_files=tuple(files),
        output_directories=tuple(directories),
        output_stdout=stdout,
        input_paths=tuple(inputs),
        site_inputs=tuple(sites),
        store_directories=tuple(stores),
        arrow_outputs=tuple(arrow),
    )
    if files or directories:
        parser.add_argument(
            "--force",
            action="store_true",
            help="replace an output that wanconform wrote earlier (never one it did not "
            "write, or changed since)",
        )


def check_outputs(args: argparse.Namespace) -> None:
    """Check every declared output of a parsed command line (skips absent ones and "-"
    where it means standard output); two outputs of one path are refused, and so is
    `--force` with none given. Each output is
    then made absolute in `args`, before any user's code (`--impl`) is imported or run: an
    engine that changes the current directory cannot move them. (Inputs keep the names
    given, which messages and results show; a trace read again is read by the absolute
    path it was validated at: `traces.tracefile.TraceSource`.)"""
    stdout = getattr(args, "output_stdout", ())
    named: dict[Path, str] = {}
    for dest in (*getattr(args, "output_files", ()), *getattr(args, "output_directories", ())):
        value = getattr(args, dest, None)
        if value is None or (value == "-" and dest in stdout):
            continue
        if not value:  # os.path.abspath("") is the current folder
            raise WanconformError(f"--{dest.replace('_', '-')}: an empty path; give a file name")
        if value == "-":  # standard output elsewhere (import -o -): never a file named "-"
            raise WanconformError(
                f"--{dest.replace('_', '-')} -: this output cannot go to standard output; "
                "give a path (./- for a file named -)"
            )
        if dest in getattr(args, "arrow_outputs", ()):
            check_arrow_path(value)
        path = Path(os.path.abspath(value))
        if dest in getattr(args, "output_files", ()):
            _not_a_directory(value, path)
        if path in named:
            raise WanconformError(
                f"{value}: given for two outputs (--{named[path]} and --{dest}); give each its own"
            )
        named[path] = dest
    if getattr(args, "force", False) and not named:
        flags = " or ".join(
            f"--{dest.replace('_', '-')}" for dest in (*args.output_files, *args.output_directories)
        )
        raise WanconformError(f"--force: no output to replace (it goes with {flags}); leave it out")
    reals = {path: Path(os.path.realpath(path)) for path in named}  # links resolved
    for value in _inputs(args):
        source = Path(os.path.realpath(value))
        for path, output in named.items():
            real = reals[path]
            if source.is_relative_to(real):  # the output is the input or holds it
                raise WanconformError(
                    f"{value}: is an input, and the output --{output} "
                    f"{'is it' if source == real else 'holds it'}; give the output a "
                    "path of its own"
                )
            if source in real.parents and _kept(source):  # a trace set, a store
                raise WanconformError(
                    f"{value}: is an input directory, and the output --{output} ({path}) "
                    "is inside it; give the output a path of its own"
                )
    for dest in getattr(args, "store_directories", ()):
        if (value := getattr(args, dest, None)) is not None:
            _check_store(args, f"--{dest.replace('_', '-')}", value, named, reals)
    for dest in getattr(args, "output_files", ()):
        value = getattr(args, dest, None)
        if value is not None and not (value == "-" and dest in stdout):
            check_output_file(value, getattr(args, "force", False))
            _DECLARED.add(Path(os.path.abspath(value)))
    for dest in getattr(args, "output_directories", ()):
        value = getattr(args, dest, None)
        if value is not None:
            check_output_directory(value, getattr(args, "force", False))
    for path, dest in named.items():
        setattr(args, dest, str(path))


def _check_store(
    args: argparse.Namespace,
    flag: str,
    value: str,
    named: dict[Path, str],
    reals: dict[Path, Path],
) -> None:
    """A store (`--dlq-dir`, `--queue-dir`), written in place by the run, may not lie in
    an output (built aside and moved into place, that would find the store's DIR there)
    or in an input, nor hold an output (`reals`: each output, links resolved)."""
    store = Path(os.path.realpath(value))
    for path, output in named.items():
        if store.is_relative_to(reals[path]):
            raise WanconformError(
                f"{flag}: {value}: is in the output --{output} {path}; give the store a "
                "path of its own"
            )
        if reals[path].is_relative_to(store):
            raise WanconformError(
                f"{value}: is the store {flag}, and the output --{output} lies in it; give "
                "the output a path of its own"
            )
    for source in _inputs(args):
        if store.is_relative_to(os.path.realpath(source)):
            raise WanconformError(
                f"{flag}: {value}: is in the input {source}; give the store a path of its own"
            )


def _inputs(args: argparse.Namespace) -> Iterator[str]:
    """The input paths a parsed command line names (`declare_outputs`): each argument of
    `inputs` (one path or a list), and each FILE of the `sites` arguments."""
    for dest in getattr(args, "input_paths", ()):
        given = getattr(args, dest, None)
        yield from [given] if isinstance(given, str) else given or []
    for dest in getattr(args, "site_inputs", ()):
        if texts := getattr(args, dest, None):
            from traces.geode import parse_site_argument  # only when --site is given

            for text in texts:
                yield from parse_site_argument(text).paths


# -- writing -------------------------------------------------------------------------------


def _remove_leftovers(folder: Path, name: str) -> None:
    """Remove `.NAME.PID.*.tmp` files or folders of processes that no longer run (a
    SIGKILLed earlier write of the same target)."""
    try:
        entries = list(folder.iterdir())
    except OSError:
        return
    for entry in entries:
        match = _LEFTOVER.fullmatch(entry.name)
        if match is None or match["name"] != name or _alive(int(match["pid"])):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _prefix(target: Path) -> str:
    return f".{target.name}.{os.getpid()}."


def _usual_mode(path: Path, mode: int) -> None:
    """Give `path` (made 0600 or 0700 by `tempfile`) `mode` less the process's umask, as
    `open` or `mkdir` would have."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, mode & ~umask)


@contextmanager
def atomic_file(path: str | os.PathLike[str], declared: bool = True) -> Iterator[Path]:
    """A temporary path to write the file at; renamed to `path` if the body completes,
    removed otherwise. A command's output file (`check_outputs`) enters the ledger: its
    new digest beside the old before the rename, alone after it, so that a kill at any
    moment leaves the file in place known as wanconform's."""
    target = Path(path)
    ledger = declared and Path(os.path.abspath(target)) in _DECLARED
    folder = target.parent
    _remove_leftovers(folder, target.name)
    try:
        fd, name = tempfile.mkstemp(dir=folder, prefix=_prefix(target), suffix=".tmp")
    except OSError as exc:
        raise _fail(path, exc.strerror or str(exc)) from None
    os.close(fd)
    temporary = Path(name)
    try:
        yield temporary
        _usual_mode(temporary, 0o666)
        if ledger:
            digest = _digest(temporary)
            old = _ledger(target.parent).get(target.name, [])
            _enter(target, [*old[-1:], digest])
        os.replace(temporary, target)
        if ledger:
            _enter(target, [digest])
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise _fail(path, exc.strerror or str(exc)) from None
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def say_written(path: str | os.PathLike[str]) -> None:
    """Say that an output file was written, the same way for every command and option
    (`-o`, `--report`, `--svg`, `--checkpoint`, `--trace`): `wanconform: wrote PATH`
    (escaped: `printable`) on standard error, beside what the command prints."""
    print(f"wanconform: wrote {printable(os.fspath(path))}", file=sys.stderr)


def write_text_atomically(path: str | os.PathLike[str], text: str) -> None:
    """Write a whole file or nothing: a temporary file in the same folder, then rename."""
    with atomic_file(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


@contextmanager
def building_directory(path: str | os.PathLike[str]) -> Iterator[Path]:
    """An empty directory next to `path` to build the output in; moved into place when
    the body completes (`publish_directory`), removed on any failure or interruption,
    with the missing parent folders it made for it."""
    target = Path(os.path.abspath(path))
    made = [folder for folder in target.parents if not folder.exists()]  # deepest first
    try:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _fail(path, exc.strerror or str(exc)) from None
        _remove_leftovers(target.parent, target.name)
        try:
            staging = Path(
                tempfile.mkdtemp(dir=target.parent, prefix=_prefix(target), suffix=".tmp")
            )
        except OSError as exc:
            raise _fail(path, exc.strerror or str(exc)) from None
        try:
            _usual_mode(staging, 0o777)
            yield staging
            publish_directory(staging, target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    except BaseException:
        for folder in made:  # the missing parents it made, as they were: absent
            with suppress(OSError):  # no longer empty: something else wrote there
                folder.rmdir()
        raise


def publish_directory(staging: Path, target: Path) -> None:
    """Move a finished output directory into place. A target that exists is replaced
    only if it is empty or an earlier output of wanconform (`check_output_directory`
    decided before the work whether the user allows that). The directory lists its
    contents (`CONTENTS`) first."""
    listed = json.dumps(_contents(staging), sort_keys=True, indent=0) + "\n"
    (staging / CONTENTS).write_text(listed, encoding="utf-8")
    if target.exists():
        if not target.is_dir() or (output_kind(target) is None and any(target.iterdir())):
            raise WanconformError(
                f"{target}: exists and is not a wanconform output; choose another directory"
            )
        old = target.with_name(f"{_prefix(target)}old.tmp")
        os.replace(target, old)
        os.replace(staging, target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(staging, target)
