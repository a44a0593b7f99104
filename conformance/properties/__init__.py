"""The properties P2-P12 and the topology analysis (R22/R23): conformance's ground
floor."""
