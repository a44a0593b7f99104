"""Self-contained HTML divergence reports (a later issue)."""
