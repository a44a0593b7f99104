"""Hypothesis profiles for the whole suite.

- `ci` (default): small and derandomized, so `make test` is fast and repeatable.
- `deep`: long exploration; choose it with `--hypothesis-profile=deep` or
  `WANCONFORM_PROFILE=deep`, and scale it with `WANCONFORM_EXAMPLES` (default 5000).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=200,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "deep",
    max_examples=int(os.environ.get("WANCONFORM_EXAMPLES", "5000")),
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("WANCONFORM_PROFILE", "ci"))
