"""The optimized, production-shaped engine of the same protocol (issue 3); never imports model/."""
