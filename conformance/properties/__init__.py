"""The properties P2-P7 and the topology analysis (R22/R23): the ground floor of conformance."""
