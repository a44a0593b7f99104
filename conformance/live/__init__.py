"""Live sites (issue 30, item 3): a real concurrent system that writes event logs.

`wanconform live` (`conformance.live.run`) starts one OS process per site
(`conformance.live.site`: asyncio; its senders' dispatchers are tasks with real timers,
its receiver a TCP server on 127.0.0.1), a fault proxy in front of each sender's remote,
and a seeded client load; every process writes its event log (docs/LOG.md, "Event
logs"), which `wanconform validate DIR` checks. This is a system under test, written
apart from the model and the impl (an import contract keeps it so): it implements the
protocol's serial subset (docs/LIVE.md says which rules).
"""
