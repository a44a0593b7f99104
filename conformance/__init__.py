"""Hypothesis conformance harness: model vs impl, and the properties P1-P8 and P12."""
