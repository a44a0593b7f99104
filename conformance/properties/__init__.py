"""The properties P2-P8 and P12 and the topology analysis (R22/R23): conformance's ground
floor."""
