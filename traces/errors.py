"""The project's one exception hierarchy.

Every message says what is wrong and where, so the command line can print it as one
line and exit 2 (see `wanconform.cli.main`).
"""

from __future__ import annotations


class WanconformError(Exception):
    """Base class of every error wanconform reports to a user."""


class ConfigError(WanconformError):
    """An invalid configuration (SPEC §2); the message names the field."""


class TraceError(WanconformError):
    """A malformed trace file or operation (SPEC §3, §12); the message names file and line."""
