"""Scale-out on Spark and what it writes: the glue, the check, segments, results, summaries."""
