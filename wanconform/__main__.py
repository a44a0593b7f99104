"""Allows `python -m wanconform`."""

from wanconform.cli import main

raise SystemExit(main())
