"""Trace files (SPEC §12): the configuration, the operation vocabulary and canonical JSON.

This package is the only code that `model/` and `impl/` share: the input format, the
configuration types and canonical JSON. It holds no protocol logic.
"""
