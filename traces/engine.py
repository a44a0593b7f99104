"""The surface every engine offers, and where engines come from (STYLE 4).

    engine = Engine(config)              # initial state of SPEC §2's configuration
    observations = engine.apply(op)      # one step (SPEC §3); list of §10 observations
    state = engine.observe()             # SPEC §10 observable state, a JSON object
    engine.settle_capped                 # optional: did the last settle stop at its cap
                                         # (R25)? P12 is then not applicable; an engine
                                         # without it is taken never to stop there. Its
                                         # cap: `settle_cap()` (1,000,000, or --settle-cap)
    engine.observe_keys(keys)            # optional: observe() with only the entries of
                                         # `keys`; the property checker asks it at each
                                         # settle. Without it the checker calls observe()
                                         # there, which costs the whole state's size

`model.Engine` wraps the pure `model.step`; `impl.Engine` is the fast mutable engine.
`make_engine("model" | "impl", config)` builds one of the two by name; `load_impl(spec)`
loads any class with this surface, `module:Class` (`--impl` of every command), so a
user's own engine is checked the same way. Both import the engines only when asked, so
this ground floor names them without importing them.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import importlib
import importlib.util
import inspect
import os
import subprocess
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from traces.config import Config
from traces.errors import WanconformError
from traces.observations import Observation
from traces.ops import Op
from traces.text import shell_word

ENGINE_NAMES = ("model", "impl")
# What a user's engine can raise that is its own failure, to be named (`raised`), not
# ours: any Exception, and SystemExit (`sys.exit` or `exit()` in its code). Ctrl-C's
# KeyboardInterrupt is the user's, and goes on.
ENGINE_FAILURES = (Exception, SystemExit)
DEFAULT_IMPL = "impl:Engine"


class Engine(Protocol):
    def apply(self, op: Op) -> list[Observation]: ...

    def observe(self) -> dict[str, Any]: ...


EngineFactory = Callable[[Config], Engine]
"""What builds an engine on a configuration: an engine class, or `--impl`'s choice."""

SETTLE_CAP = 1_000_000
"""R25: a settle stops after this many inner operations at most."""

SETTLE_CAP_VARIABLE = "WANCONFORM_SETTLE_CAP"
"""Where `--settle-cap N` puts its N for the engines of this process, the processes it
starts and Spark's executors (`conformance.spark.glue` passes it on)."""


def settle_cap() -> int:
    """The cap on a settle's inner operations that engines built now honour: R25's
    1,000,000, unless `--settle-cap` chose another (to find an engine that never settles
    sooner; both engines then stop at the same count, so they still agree)."""
    text = os.environ.get(SETTLE_CAP_VARIABLE, "")
    return int(text) if text.isdigit() and int(text) > 0 else SETTLE_CAP


YOUNG_OBJECTS_PER_COLLECTION = 1_000_000


def tune_gc() -> None:
    """Set this process's cyclic garbage collector for engines that run long: an engine's
    state is a large, long-lived heap without cycles (immutable maps and tuples, freed by
    reference counting; a 300,000-operation run of both engines leaves no cyclic garbage
    at all), rebuilt a little at every operation. With CPython's default of a young
    collection every 700 new objects, and a full one whenever the survivors have grown
    by a quarter, the collector rescans that heap again and again: a third of the
    model's time at 100,000 keys (`wanconform bench --keys 100000`). CPython counts new
    tracked objects net of those freed, so a steady engine rarely reaches a young
    collection every 1,000,000 of them: on the 300,000-operation / 100,000-key steady
    trace the collector's time fell from 0.75-1.0 s (one every 100,000 objects) to
    nothing for the model, and from 1.0-1.7 s to 0.45 s with both engines. Cycles are
    still collected: at most 1,000,000 objects (about 100 MB) wait for the next young
    collection. Called once by the command line and by each Spark task."""
    gc.set_threshold(YOUNG_OBJECTS_PER_COLLECTION, 10, 10)


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic collector off while observed states are built and compared, and what
    was built meanwhile moved to the oldest generation unscanned. An observed state is a
    large tree of new dicts and lists without cycles: a young collection that falls in
    the middle, or right after while one of them is still kept (the run's final state),
    would scan every one of its containers for nothing (0.4-0.5 s for the two
    200,000-entry states of the 300,000-operation / 100,000-key steady trace, a tenth of
    what the lockstep adds to the model). `gc.freeze()` then `gc.unfreeze()` moves every
    tracked object to the oldest generation in constant time, where a full collection
    still finds any cycle."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        if enabled:
            gc.enable()


def make_engine(name: str, config: Config) -> Engine:
    """Build engine `name` ("model" or "impl") on `config`."""
    if name not in ENGINE_NAMES:
        raise ValueError(f"unknown engine {name!r}")
    module = importlib.import_module(name)
    engine: Engine = module.Engine(config)
    return engine


def _import(module_name: str, spec: str, search: Iterable[str]) -> Any:
    """Import `module_name` as Python would, then (as `python -m` does for the current
    directory) from each directory of `search` in turn."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        top = module_name.split(".")[0]
        if exc.name is None or exc.name.split(".")[0] != top:
            raise WanconformError(
                f"--impl {spec}: cannot import module {module_name}: {exc}"
            ) from None
    except ImportError as exc:
        raise WanconformError(f"--impl {spec}: cannot import module {module_name}: {exc}") from None
    except ENGINE_FAILURES as exc:  # the module's own code failed (a SyntaxError, a raise ...)
        raise WanconformError(f"--impl {spec}: importing {module_name} {raised(exc)}") from None
    looked = []
    for directory in dict.fromkeys(os.path.abspath(d) for d in search):
        looked.append(directory)
        if not _holds(directory, module_name):
            continue
        sys.path.insert(0, directory)
        _SEARCHED.add(directory)
        try:
            return importlib.import_module(module_name)
        except ImportError as exc:
            raise WanconformError(
                f"--impl {spec}: cannot import module {module_name} from {directory}: {exc}"
            ) from None
        except ENGINE_FAILURES as exc:
            raise WanconformError(
                f"--impl {spec}: importing {module_name} from {directory} {raised(exc)}"
            ) from None
    where = ", ".join(looked) if looked else "nowhere else"
    raise WanconformError(
        f"--impl {spec}: no module named {module_name} on Python's path nor in {where}; "
        "run from the directory that holds it, or add its directory to PYTHONPATH"
    )


_FOUND_IN: dict[str, str] = {}
"""The directory each `--impl` spec's module was found in, when a command run from the
current directory would not find it (`load_impl`'s search: e.g. next to the traces)."""


_SEARCHED: set[str] = set()
"""The directories `load_impl`'s search put on Python's path (in this process)."""


def _module_root(module: Any, module_name: str) -> str | None:
    """The directory on Python's path that `module` (named `module_name`) was loaded
    from, or None (no file)."""
    path: str | None = getattr(module, "__file__", None)
    if path is None:
        return None
    levels = module_name.count(".") + 1 + (os.path.basename(path) == "__init__.py")
    root = os.path.abspath(path)
    for _ in range(levels):
        root = os.path.dirname(root)
    return root


def _holds(directory: str, module_name: str) -> bool:
    """Does `directory` hold the module or package `module_name`?"""
    relative = os.path.join(directory, module_name.replace(".", os.sep))
    return os.path.isfile(relative + ".py") or os.path.isdir(relative)


def _refuse_shadowed(module_name: str, spec: str, search: Iterable[str]) -> None:
    """A user's module (or package) in a searched directory whose top-level name Python
    already imports from elsewhere (wanconform's own `model`, `traces`, `impl`, the
    standard library's `json` ...) can never be the one loaded: refused, naming both,
    rather than an engine of the same name checked in its place (a `model.py` with an
    `Engine` in the current directory was wanconform's model agreeing with itself)."""
    top = module_name.split(".")[0]
    directory = next((d for d in map(os.path.abspath, search) if _holds(d, top)), None)
    if directory is None:
        return
    try:
        found = importlib.util.find_spec(top)
    except (ImportError, ValueError):  # a broken module of that name: its import will say
        return
    if found is None:
        return
    if found.origin is not None and os.path.isfile(found.origin):
        location = found.origin
        root = os.path.dirname(location)
        if found.submodule_search_locations is not None:  # a package: its __init__.py
            root = os.path.dirname(root)
    elif found.submodule_search_locations:  # a namespace package
        location = next(iter(found.submodule_search_locations))
        root = os.path.dirname(location)
    else:  # built into Python (sys, builtins ...)
        location, root = "Python itself (built in)", None
    if root is not None and (
        os.path.realpath(root) == os.path.realpath(directory) or os.path.abspath(root) in _SEARCHED
    ):  # the directory's own, or one an earlier search of this process imported
        return
    yours = os.path.join(
        directory, top + ("" if os.path.isdir(os.path.join(directory, top)) else ".py")
    )
    raise WanconformError(
        f"--impl {spec}: {yours} cannot be imported as {top}: Python imports {top} from "
        f"{location}; rename yours (e.g. my_{top})"
    )


def impl_directory(spec: str) -> str | None:
    """The directory the impl `spec`'s module was found in, when not from the current
    directory (`load_impl`'s search), else None."""
    return _FOUND_IN.get(spec)


def impl_command(spec: str) -> str:
    """The start of a command line that finds the impl `spec` as this run did: `wanconform`,
    after `PYTHONPATH=DIR ` when its module was found next to the input, not where the
    command runs (so a printed reproduce command works on its own output anywhere)."""
    directory = _FOUND_IN.get(spec)
    return "wanconform" if directory is None else f"PYTHONPATH={shell_word(directory)} wanconform"


def class_command(engine: type) -> str:
    """The start of a command line, run from the current directory, that loads `engine` as
    `--impl module:Class`: `wanconform`, after `PYTHONPATH=DIR ` when a Python started here
    would not import its module from the file it came from (a class in a test file that
    pytest imported from `tests/`, whose directory only pytest put on Python's path)."""
    name = engine.__module__
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    root = None if module is None else _module_root(module, name)
    if path is None or root is None or _holds(os.getcwd(), name):
        return "wanconform"
    probe = (
        "import importlib.util, sys\n"
        "try:\n    spec = importlib.util.find_spec(sys.argv[1])\n"
        "except (ImportError, ValueError):\n    spec = None\n"
        "print(spec.origin if spec is not None and spec.origin else '')"
    )
    found = subprocess.run(
        [sys.executable, "-c", probe, name], capture_output=True, text=True, check=False
    ).stdout.strip()
    if found and os.path.realpath(found) == os.path.realpath(path):
        return "wanconform"
    relative = os.path.relpath(root)
    shown = root if relative.startswith(os.pardir) else relative
    return f"PYTHONPATH={shell_word(shown)} wanconform"


_CALLERS = tuple(
    os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), package, "")
    for package in ("conformance", "traces")
)
"""The directories of the code that calls an engine (`conformance.running.lockstep`'s
`applied_or_raised` ...): a frame there is wanconform's, not the user's."""


def raised(exc: BaseException) -> str:
    """`raised KeyError: 'x' (engine.py:12, in apply)`: an exception of a user's code,
    with where it was raised (the innermost frame; a SyntaxError's file and line)."""
    text = f"raised {type(exc).__name__}" + (f": {exc}" if str(exc) else "")
    if isinstance(exc, SyntaxError):
        return text
    frames = [  # the user's code: not this file, nor Python's frozen modules (`exit()`'s)
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if f.filename != __file__ and not f.filename.startswith("<frozen ")
    ]
    while frames and frames[0].filename.startswith(_CALLERS):  # where wanconform called it
        del frames[0]
    if not frames:  # raised by the call itself (e.g. the wrong arguments)
        return text
    last = frames[-1]
    return f"{text} ({os.path.basename(last.filename)}:{last.lineno}, in {last.name})"


def settle_capped(engine: Engine, spec: str) -> bool:
    """The engine's optional `settle_capped` (False without it). Anything but a bool (a
    method written for the attribute, always true) would take every settle for one that
    stopped at its cap, and P2 and P12 for not applicable: one line naming it instead."""
    capped = getattr(engine, "settle_capped", False)
    if not isinstance(capped, bool):
        raise WanconformError(
            f"--impl {spec}: settle_capped is a {type(capped).__name__}, not a bool: an "
            "attribute (or a property) that says whether the last settle stopped at its cap"
        )
    return capped


def built(factory: EngineFactory, spec: str, config: Config) -> Engine:
    """`factory(config)`, a user's engine (`--impl spec`) failing to build as one line."""
    if spec == DEFAULT_IMPL:
        return factory(config)
    try:
        return factory(config)
    except WanconformError:
        raise
    except ENGINE_FAILURES as exc:
        raise WanconformError(f"--impl {spec}: building the engine {raised(exc)}") from None


def load_impl(spec: str | None, search: Iterable[str] = ()) -> EngineFactory:
    """The engine class named by `module:Class` (None: the project's impl). A module
    that Python cannot find is looked for in the current directory and then in the
    directories of `search` (e.g. where the traces are). A bad spec is one line naming
    what is wrong (module not found and where it looked, no such class, not an engine)."""
    if spec is None or spec == DEFAULT_IMPL:
        return lambda config: make_engine("impl", config)
    module_name, colon, class_name = spec.partition(":")
    if not colon or not module_name or not class_name:
        raise WanconformError(f"--impl {spec}: expected module:Class, e.g. {DEFAULT_IMPL}")
    if module_name.startswith(".") or module_name.endswith(".py") or "/" in module_name:
        stem = os.path.basename(module_name).removesuffix(".py").lstrip(".")
        raise WanconformError(
            f"--impl {spec}: expected module:Class, a module's full name, not a file's: "
            f"--impl {stem}:{class_name}, run from the directory that holds {stem}.py "
            "(or with it on PYTHONPATH)"
        )
    _refuse_shadowed(module_name, spec, [os.getcwd(), *search])
    module = _to_stderr(_import)(module_name, spec, [os.getcwd(), *search])
    # Where a command run from here needs PYTHONPATH to find it: a directory a search put
    # on Python's path, when the module came from there (this load's import, or an earlier
    # one's) and the current directory does not hold it.
    _FOUND_IN.pop(spec, None)
    root = _module_root(module, module_name)
    if root in _SEARCHED and not _holds(os.getcwd(), module_name):
        _FOUND_IN[spec] = root
    engine = getattr(module, class_name, None)
    if engine is None:
        raise WanconformError(f"--impl {spec}: module {module_name} has no {class_name}")
    if not isinstance(engine, type) or not all(
        callable(getattr(engine, method, None)) for method in ("apply", "observe")
    ):
        raise WanconformError(
            f"--impl {spec}: {class_name} is not an engine (a class with apply(op) and observe())"
        )
    factory: EngineFactory = user_engine(engine)
    return factory


def _to_stderr(method: Callable[..., Any]) -> Callable[..., Any]:
    """`method` with what it prints (sys.stdout) going to stderr."""

    def call(*args: Any, **kwargs: Any) -> Any:
        saved = sys.stdout
        sys.stdout = sys.stderr
        try:
            return method(*args, **kwargs)
        finally:
            sys.stdout = saved

    return call


def user_engine(engine: type) -> type:
    """A user's engine class whose prints (a debugging `print` in apply ...) go to stderr:
    stdout is wanconform's (`--json` a line per trace, `shrink`'s result). A subclass of
    the same module and name, so that the reproduce commands name the user's class. Its
    `apply` is given a copy of the operation: the model was given the same one and may
    hold its value (a put's), which an engine that changes what it was given (updates a
    value in place) would change in the model's state too."""
    namespace: dict[str, Any] = {
        "__module__": engine.__module__,
        "__qualname__": engine.__qualname__,
    }
    for name in ("__init__", "apply", "observe", "observe_keys"):
        method = getattr(engine, name, None)
        if callable(method):

            def through(self: Any, *args: Any, _name: str = name, **kwargs: Any) -> Any:
                if _name == "apply":
                    args = copy.deepcopy(args)
                return _to_stderr(getattr(super(quiet, self), _name))(*args, **kwargs)

            namespace[name] = through
    with contextlib.suppress(TypeError, ValueError):  # (none to tell)
        # its parameters are the user's (`--dlq-dir` asks for `dlq_dir`), not `through`'s
        namespace["__signature__"] = inspect.signature(engine)
    quiet = type(engine.__name__, (engine,), namespace)
    return quiet
