"""Compile impl/ with mypyc into build/impl-compiled/ (`python -m tools.build_compiled`).

The modules of `impl.COMPILED_MODULES` become C extensions in `build/impl-compiled/lib/impl/`
(one shared library, `impl/_native__mypyc`, and one small module per source), next to
`manifest.json`: the digest of the sources compiled (`impl.source_digest`) and the
interpreter they are for. `impl/__init__.py` uses them only while both still match, so an
edited source is never shadowed by an older extension. The digest is taken before and
after the compilation; if a source changed meanwhile nothing is published.

The build happens in a temporary directory next to the target, which then replaces the
target by renames; a lock serializes concurrent builds, and a build that is already
current is not redone. The compiler's output goes to `build/impl-compiled.log`. Exit
status 0 if the compiled modules are current and load; otherwise 1 after a one-line
warning (impl then runs from the Python sources; `make` goes on).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import impl

TIMEOUT_S = 600


def _compile(stage: Path) -> None:
    """mypyc's C output into `stage/c`, the built extensions into `stage/lib`."""
    from mypyc.build import mypycify
    from setuptools import setup  # type: ignore[import-untyped]

    # Calls between the compiled functions go straight to them, not through the shared
    # library's symbol table (nothing interposes a symbol of an extension module): 2.6%
    # fewer instructions per operation of the steady workload.
    os.environ["CFLAGS"] = f"{os.environ.get('CFLAGS', '')} -fno-semantic-interposition"
    os.chdir(impl.ROOT)  # mypy finds impl/ and traces/ (and pyproject.toml) from here
    paths = [f"impl/{name}.py" for name in impl.COMPILED_MODULES]
    extensions = mypycify(
        ["--cache-dir", str(stage / "mypy-cache"), *paths],
        target_dir=str(stage / "c"),
        group_name="impl._native",  # the shared library lives in the impl package
    )
    os.chdir(stage)  # setuptools must not read the project's own configuration
    setup(
        name="impl-compiled",
        ext_modules=extensions,
        script_args=[
            "--quiet",
            "build_ext",
            "--build-lib",
            str(stage / "lib"),
            "--build-temp",
            str(stage / "tmp"),
        ],
    )


def _loads(build_dir: Path) -> bool:
    """Whether a fresh interpreter picks the compiled modules in `build_dir`."""
    env = dict(os.environ, WANCONFORM_IMPL_BUILD_DIR=str(build_dir))
    env.pop("WANCONFORM_PURE_IMPL", None)
    check = "import impl, sys; sys.exit(0 if impl.COMPILED else 1)"
    result = subprocess.run(
        [sys.executable, "-c", check], env=env, cwd=impl.ROOT, timeout=TIMEOUT_S, check=False
    )
    return result.returncode == 0


def _warn(reason: str) -> bool:
    """The one line a failed build prints (False, for `return`)."""
    print(
        f"warning: impl/ not compiled with mypyc ({reason}); impl runs as Python", file=sys.stderr
    )
    return False


def build(target: Path) -> bool:
    """Compile into `target` unless it is current; whether it is current and loads."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if impl.current_build(target) is not None and _loads(target):
            print(f"impl: compiled modules in {target} are current")
            return True
        start = time.monotonic()
        digest = impl.source_digest()
        stage = target.parent / f"{target.name}.tmp-{os.getpid()}"
        shutil.rmtree(stage, ignore_errors=True)
        stage.mkdir()
        log = target.parent / f"{target.name}.log"
        try:
            with open(log, "w") as output:
                compiled = subprocess.run(
                    [sys.executable, "-m", "tools.build_compiled", "--compile-into", str(stage)],
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    cwd=impl.ROOT,
                    timeout=TIMEOUT_S,
                    check=False,
                )
            if compiled.returncode != 0:
                return _warn(f"mypyc failed, see {log}")
            if impl.source_digest() != digest:
                return _warn("the sources changed during the compilation")
            manifest = {
                "digest": digest,
                "interpreter": impl.interpreter(),
                "modules": list(impl.COMPILED_MODULES),
            }
            shutil.rmtree(stage / "tmp")
            shutil.rmtree(stage / "mypy-cache")
            (stage / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
            if not _loads(stage):
                return _warn(f"the compiled modules do not load, see {log}")
            old = target.parent / f"{target.name}.old-{os.getpid()}"
            if target.exists():
                target.rename(old)
            stage.rename(target)
            shutil.rmtree(old, ignore_errors=True)
        except (OSError, subprocess.SubprocessError) as error:
            return _warn(f"{error}")
        finally:
            shutil.rmtree(stage, ignore_errors=True)
        print(f"impl: compiled with mypyc in {time.monotonic() - start:.1f} s into {target}")
        return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.build_compiled", description=__doc__)
    parser.add_argument(
        "--out", type=Path, default=impl.BUILD_DIR, help=f"default {impl.BUILD_DIR}"
    )
    parser.add_argument("--compile-into", type=Path, help=argparse.SUPPRESS)  # the child
    args = parser.parse_args(argv)
    if args.compile_into is not None:
        _compile(args.compile_into.resolve())
        return 0
    return 0 if build(args.out.resolve()) else 1


if __name__ == "__main__":
    sys.exit(main())
