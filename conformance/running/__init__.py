"""One run of a trace: the run loop, the lockstep (P1), and what a run reports."""
