"""The optimized, production-shaped engine of the same protocol; never imports model/.

`Engine(config)`, `engine.apply(op) -> observations`, `engine.observe() -> state`: the
surface of `traces.engine`, on one mutable state (see `impl/engine.py`).

Compiled or not. `python -m tools.build_compiled` (run by `make`) compiles the modules of
impl/ with mypyc into `build/impl-compiled/`, with a manifest holding the digest of the
sources it compiled. This package uses those extension modules (by putting their
directory first on `impl.__path__`) only if the manifest matches the current sources and
this interpreter, and the extensions import cleanly; otherwise, silently, the Python
sources. `WANCONFORM_PURE_IMPL=1` forces the Python sources. `COMPILED` tells which.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import sys
import sysconfig
from pathlib import Path

_HERE = Path(__file__).resolve().parent
ROOT = _HERE.parent
BUILD_DIR = ROOT / "build" / "impl-compiled"
"""Where `tools.build_compiled` puts the extension modules (`lib/impl/`) and manifest."""
MANIFEST = "manifest.json"
COMPILED_MODULES = ("applied", "state", "engine")
"""The modules compiled by mypyc; the others (this one, the build script) stay Python."""
TYPE_SOURCES = ("traces/config.py", "traces/observations.py", "traces/ops.py")
"""The modules outside impl/ whose types the compiled code was checked against."""


def source_files() -> list[Path]:
    """The files whose contents the compiled modules depend on: every impl/*.py and
    the modules of `TYPE_SOURCES`."""
    return sorted(_HERE.glob("*.py")) + [ROOT / name for name in TYPE_SOURCES]


def source_digest() -> str:
    """SHA-256 over the names and contents of `source_files()`."""
    digest = hashlib.sha256()
    for path in source_files():
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def interpreter() -> dict[str, str]:
    """What an extension module is built for (recorded in, and checked against, the
    manifest)."""
    return {
        "cache_tag": str(sys.implementation.cache_tag),
        "ext_suffix": str(sysconfig.get_config_var("EXT_SUFFIX")),
    }


def current_build(build_dir: Path) -> Path | None:
    """The package directory of the compiled modules in `build_dir` if its manifest
    matches the current sources and this interpreter, else None."""
    try:
        manifest = json.loads((build_dir / MANIFEST).read_text())
        if not isinstance(manifest, dict):
            return None
        if manifest.get("digest") != source_digest():
            return None
        if manifest.get("interpreter") != interpreter():
            return None
    except (OSError, ValueError):
        return None
    package = build_dir / "lib" / "impl"
    return package if package.is_dir() else None


def _use_compiled() -> bool:
    """Put the compiled modules first on `__path__` and import them; on any failure
    take them off again and forget whatever they loaded."""
    if os.environ.get("WANCONFORM_PURE_IMPL", "") not in ("", "0"):
        return False
    build_dir = Path(os.environ.get("WANCONFORM_IMPL_BUILD_DIR") or BUILD_DIR)
    package = current_build(build_dir)
    if package is None:
        return False
    entry = str(package)
    __path__.insert(0, entry)
    try:
        for name in COMPILED_MODULES:
            module = importlib.import_module(f"impl.{name}")
            if not str(module.__file__).startswith(entry + os.sep):
                raise ImportError(f"impl.{name} was not compiled: {module.__file__}")
        return True
    except Exception:  # any failure of the extensions means the Python sources
        __path__.remove(entry)
        for name in [name for name in sys.modules if name.startswith("impl.")]:
            del sys.modules[name]
        return False


COMPILED: bool = _use_compiled()
"""Whether `Engine` (and impl's other modules) are the mypyc-compiled ones."""

from impl.engine import Engine  # noqa: E402 - after the choice of modules

__all__ = ["COMPILED", "Engine"]
