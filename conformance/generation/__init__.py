"""Generated traces: the profiles of a campaign's trace set."""
