"""Searching for failures and shrinking them: exploration, shrinking, examples, Hypothesis."""
