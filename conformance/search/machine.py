"""The conformance machine: a Hypothesis RuleBasedStateMachine over SPEC §3's operations.

Every rule is named after the operation it performs and draws sites and keys from
bundles (senders and their dispatchers, which depend on the drawn configuration, are
drawn inside the rule; writes draw a client thread, R29),
so a printed counterexample reads as a trace. Each step is applied to the
model and to the impl; after every step the machine asserts P1 (same observations, same
observable state) and P3, P4, P6, P7; at the end of a run it brings every site back up,
issues `settle` and asserts P2 and P5 where they apply (`conformance.properties.checker`).

Swarm testing: Hypothesis's stateful engine draws, for every run, a random subset of the
rules to enable (its "feature flags"), so that some runs are all faults and others never
lose a message, and deep states are reached. Rules that pick a sender or a key prefer,
most of the time, one for which the operation is enabled (a batch or ack in the network,
a live entry), so that few steps are wasted on skipped operations.

On a failure the run is written out as a trace file (`wanconform replay --engine both
FILE` reproduces it) and the error message names the file.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    multiple,
    precondition,
    rule,
)

from conformance.running.coverage import Coverage
from conformance.running.run import TraceRun
from conformance.search.shrink import replay_command
from conformance.search.strategies import (
    EXCEPTIONS,
    KEYS,
    bulk_entries,
    configs,
    threads,
    values,
)
from traces.canonical import canonical_json
from traces.config import Config, SenderConfig
from traces.engine import DEFAULT_IMPL, EngineFactory, class_command, load_impl, make_engine
from traces.ops import (
    Deliver,
    DeliverAck,
    Delta,
    Destroy,
    Drop,
    DropAck,
    Fail,
    Op,
    PauseSender,
    Put,
    PutAll,
    Redeliver,
    RestartSender,
    ResumeSender,
    Settle,
    SiteDown,
    SiteUp,
    StartSender,
    StopSender,
    Tick,
    op_to_json,
)
from traces.outputs import write_text_atomically
from traces.text import printable
from traces.tracefile import trace_text, where


class ConformanceFailure(AssertionError):
    """P1 or a property failed; the message names the trace file that reproduces it."""


def configured(machine: WanConformance) -> bool:
    return machine.config is not None


class WanConformance(RuleBasedStateMachine):
    """Model vs impl on one random configuration, with the properties checked throughout."""

    impl_factory: ClassVar[EngineFactory] = staticmethod(lambda config: make_engine("impl", config))
    counterexample_dir: ClassVar[Path] = Path("out/counterexamples")
    coverage: ClassVar[Coverage] = Coverage()
    last_failure: ClassVar[tuple[Config, list[Op], Path] | None] = None

    sites = Bundle("sites")
    keys = Bundle("keys")

    def __init__(self) -> None:
        super().__init__()
        self.config: Config | None = None
        self.ops: list[Op] = []
        self.failed = False
        self.bulk_done = True

    # -- setup ---------------------------------------------------------------------

    @initialize(target=sites, config=configs(), deep=st.integers(0, 3))
    def configure(self, config: Config, deep: int) -> Any:
        type(self).coverage.start_run(config)  # R28-R31's branches need the configuration
        # One run in four may issue one bulk `putall` (deep queues): every later step
        # compares a large state, so the others stay small (cost).
        self.bulk_done = deep != 0
        # Every step compares the whole state too: the machine's states are tiny (three
        # keys, a few sites, at most a run's 50 steps queued), so that costs little and
        # also catches state differences that heal before the next scheduled comparison.
        self.run = TraceRun(
            "machine",
            config,
            impl=type(self).impl_factory,
            impl_spec=type(self).impl_spec(),
            stop_at_failure=True,
            state_every=1,
        )
        self.state = self.run.observe()  # the model's state after the last step
        self.config = config  # configured only now: an engine that cannot build has no state
        return multiple(*config.sites)

    @initialize(target=keys)
    def choose_keys(self) -> Any:
        return multiple(*KEYS)

    def draw_sender(self, data: st.DataObject, message: str) -> tuple[str, int]:
        """A dispatcher of a sender of this run's configuration (R29), most often one whose
        `message` ("batch" or "ack") is in the network, so that deliveries and drops are
        not mostly skipped."""
        assert self.config is not None
        lanes = [(s.id, d) for s in self.config.senders for d in range(s.dispatcher_threads)]
        senders = self.state["senders"]
        waiting = [(i, d) for i, d in lanes if senders[i]["dispatchers"][d]["network"][message]]
        if waiting and data.draw(st.integers(0, 9), label="prefer waiting") < 8:
            lanes = waiting
        lane: tuple[str, int] = data.draw(st.sampled_from(lanes), label="sender")
        return lane

    def draw_live_key(self, data: st.DataObject, site: int, key: str) -> str:
        """Most often a key with a live entry at `site`, so deltas and destroys run."""
        entries = self.state["sites"][str(site)]["entries"]
        live = sorted(k for k, entry in entries.items() if entry["value"] is not None)
        if live and data.draw(st.integers(0, 9), label="prefer live") < 8:
            live_key: str = data.draw(st.sampled_from(live), label="key")
            return live_key
        return key

    # -- one step on both engines ----------------------------------------------------

    def apply(self, op: Op) -> None:
        assert self.config is not None
        self.ops.append(op)
        model_observations = self.run.step(f"operation {len(self.ops)}", op)
        self.state = self.run.observe()
        type(self).coverage.record(op, model_observations)
        type(self).coverage.record_state(self.state)
        if self.run.failure is not None:
            divergence = self.run.divergence
            differences = () if divergence is None else divergence.differences
            problems = [
                f"P1: {printable(d.path)}: model={canonical_json(d.model)} "
                f"impl={canonical_json(d.impl)}"
                for d in differences
            ]
            problems += [f"{v.property}: {v.message}" for v in self.run.last_violations]
            self.fail_with(problems, properties=bool(self.run.last_violations))

    @classmethod
    def impl_spec(cls) -> str:
        """The impl as `--impl` names it: `module:Class`, or impl's own."""
        factory = cls.impl_factory
        if isinstance(factory, type) and factory is not load_impl(DEFAULT_IMPL):
            return f"{factory.__module__}:{factory.__qualname__}"
        return DEFAULT_IMPL

    @classmethod
    def replay_command(cls, properties: bool, trace: Path) -> str:
        """`shrink.replay_command` of `trace`, as run from the current directory (after
        `PYTHONPATH=DIR ` where Python would not find the impl's module there)."""
        spec, factory = cls.impl_spec(), cls.impl_factory
        start = "wanconform"
        if spec != DEFAULT_IMPL and isinstance(factory, type):
            start = class_command(factory)
        return replay_command(spec, properties, str(trace), start)

    def fail_with(self, problems: list[str], properties: bool) -> None:
        """Write the run as a trace file and fail, naming the operation by its line in
        that file (line 1 is the configuration). `properties`: a property (P2-P12) failed,
        which only `replay --check-properties` shows."""
        assert self.config is not None
        self.failed = True
        directory = type(self).counterexample_dir
        directory.mkdir(parents=True, exist_ok=True)
        text = trace_text(self.config, self.ops)
        path = directory / f"counterexample-{hashlib.sha256(text.encode()).hexdigest()[:12]}.jsonl"
        write_text_atomically(path, text)
        type(self).last_failure = (self.config, list(self.ops), path)
        raise ConformanceFailure(
            f"{where(str(path), len(self.ops) + 1)} {canonical_json(op_to_json(self.ops[-1]))}:\n  "
            + "\n  ".join(problems[:20])
            + f"\nreproduce with: {self.replay_command(properties, path)}"
        )

    # -- the operations of SPEC §3 -----------------------------------------------------

    @precondition(configured)
    @rule(site=sites, key=keys, value=values, thread=threads)
    def put(self, site: int, key: str, value: dict[str, Any], thread: int) -> None:
        self.apply(Put(site, key, value, thread))

    @precondition(configured)
    @rule(site=sites, key=keys, changes=values, thread=threads, data=st.data())
    def delta(
        self, site: int, key: str, changes: dict[str, Any], thread: int, data: st.DataObject
    ) -> None:
        self.apply(Delta(site, self.draw_live_key(data, site, key), changes, thread))

    @precondition(configured)
    @rule(site=sites, key=keys, thread=threads, data=st.data())
    def destroy(self, site: int, key: str, thread: int, data: st.DataObject) -> None:
        self.apply(Destroy(site, self.draw_live_key(data, site, key), thread))

    @precondition(configured)
    @rule(
        site=sites,
        entries=st.dictionaries(st.sampled_from(KEYS), values, max_size=2),
        thread=threads,
    )
    def putall(self, site: int, entries: dict[str, dict[str, Any]], thread: int) -> None:
        self.apply(PutAll(site, entries, thread))

    @precondition(lambda machine: configured(machine) and not machine.bulk_done)
    @rule(site=sites, entries=bulk_entries)
    def putall_bulk(self, site: int, entries: dict[str, dict[str, Any]]) -> None:
        """A `putall` of 65-80 keys, at most once a run: a queue deeper than a batch of 64,
        whose ack leaves a dead prefix for the queue to compact (R12, R13)."""
        self.bulk_done = True
        self.apply(PutAll(site, entries))

    @precondition(configured)
    @rule(ms=st.sampled_from([1, 10, 100, 1000, 6000, 12000]))
    def tick(self, ms: int) -> None:
        self.apply(Tick(ms))

    @precondition(configured)
    @rule(data=st.data())
    def deliver(self, data: st.DataObject) -> None:
        self.apply(Deliver(*self.draw_sender(data, "batch")))

    @precondition(configured)
    @rule(data=st.data())
    def deliver_ack(self, data: st.DataObject) -> None:
        self.apply(DeliverAck(*self.draw_sender(data, "ack")))

    @precondition(configured)
    @rule(data=st.data())
    def drop(self, data: st.DataObject) -> None:
        self.apply(Drop(*self.draw_sender(data, "batch")))

    @precondition(configured)
    @rule(data=st.data())
    def drop_ack(self, data: st.DataObject) -> None:
        self.apply(DropAck(*self.draw_sender(data, "ack")))

    @precondition(configured)
    @rule(site=sites)
    def site_down(self, site: int) -> None:
        self.apply(SiteDown(site))

    @precondition(configured)
    @rule(site=sites, wipe=st.booleans())
    def site_up(self, site: int, wipe: bool) -> None:
        self.apply(SiteUp(site, wipe))

    @precondition(configured)
    @rule(site=sites, key=keys, exception=st.sampled_from(EXCEPTIONS), times=st.integers(1, 3))
    def fail(self, site: int, key: str, exception: str, times: int) -> None:
        self.apply(Fail(site, key, exception, times))

    @precondition(configured)
    @rule()
    def settle(self) -> None:
        self.apply(Settle())

    @precondition(configured)
    @rule(data=st.data())
    def redeliver(self, data: st.DataObject) -> None:
        """R26: most often a sender that holds dead letters; all of them or a few."""
        assert self.config is not None
        senders = self.state["senders"]
        ids = [s.id for s in self.config.senders]
        holding = [i for i in ids if senders[i]["dlq"]]
        if holding and data.draw(st.integers(0, 9), label="prefer holding") < 8:
            ids = holding
        sender: str = data.draw(st.sampled_from(ids), label="sender")
        records: list[str] = [record["event_id"] for record in senders[sender]["dlq"]]
        events: tuple[str, ...] | None = None
        some: bool = data.draw(st.booleans(), label="some records")
        if records and some:  # a few of them, or only an id that is not there
            chosen: list[str] = data.draw(
                st.lists(st.sampled_from(records), max_size=3), label="events"
            )
            events = tuple(chosen) if chosen else ("9:999",)
        self.apply(Redeliver(sender, events))

    def holding(self) -> list[SenderConfig]:
        """The senders whose dead-letter queue holds records (R24)."""
        assert self.config is not None
        return [s for s in self.config.senders if self.state["senders"][s.id]["dlq"]]

    # R26's branches need a dead letter and then a wipe or a newer write of its key before
    # the redelivery: sequences that random rules reach too rarely in a small run.
    @precondition(lambda self: configured(self) and bool(self.holding()))
    @rule(data=st.data())
    def wipe_then_redeliver(self, data: st.DataObject) -> None:
        """R21 then R26: the records' own values requeued, or a secure one unrecoverable
        (a secure sender is preferred: its records are the rarer case)."""
        holding = self.holding()
        secure = [s for s in holding if s.dlq_secure]
        if secure and data.draw(st.integers(0, 9), label="prefer secure") < 7:
            holding = secure
        sender = data.draw(st.sampled_from(holding), label="sender")
        self.apply(SiteDown(sender.site))
        self.apply(SiteUp(sender.site, True))
        self.apply(Redeliver(sender.id))

    def draw_lifecycle_sender(self, data: st.DataObject, running: bool | None) -> str:
        """A sender of this run (R36, R37), most often one in the state the operation
        needs (`running`: True, False, or None for any), so few are skipped."""
        assert self.config is not None
        ids = [s.id for s in self.config.senders]
        senders = self.state["senders"]
        fitting = [i for i in ids if running is None or senders[i]["running"] == running]
        if fitting and data.draw(st.integers(0, 9), label="prefer fitting") < 8:
            ids = fitting
        sender: str = data.draw(st.sampled_from(ids), label="sender")
        return sender

    @precondition(lambda self: configured(self) and bool(self.config.senders))
    @rule(data=st.data())
    def restart_sender(self, data: st.DataObject) -> None:
        self.apply(RestartSender(self.draw_lifecycle_sender(data, None)))

    @precondition(lambda self: configured(self) and bool(self.config.senders))
    @rule(data=st.data())
    def stop_sender(self, data: st.DataObject) -> None:
        self.apply(StopSender(self.draw_lifecycle_sender(data, True)))

    @precondition(lambda self: configured(self) and bool(self.config.senders))
    @rule(data=st.data(), clean=st.booleans())
    def start_sender(self, data: st.DataObject, clean: bool) -> None:
        self.apply(StartSender(self.draw_lifecycle_sender(data, False), clean))

    @precondition(lambda self: configured(self) and bool(self.config.senders))
    @rule(data=st.data(), resume=st.booleans())
    def pause_or_resume_sender(self, data: st.DataObject, resume: bool) -> None:
        sender = self.draw_lifecycle_sender(data, True)
        self.apply(ResumeSender(sender) if resume else PauseSender(sender))

    @precondition(lambda self: configured(self) and bool(self.holding()))
    @rule(data=st.data())
    def redeliver_held(self, data: st.DataObject) -> None:
        """R26 on a sender holding records, nothing in between: most are requeued (the
        entry is still the record's own write, or the record keeps its value)."""
        sender = data.draw(st.sampled_from(self.holding()), label="sender")
        self.apply(Redeliver(sender.id))

    @precondition(lambda self: configured(self) and bool(self.holding()))
    @rule(data=st.data(), value=values)
    def rewrite_then_redeliver(self, data: st.DataObject, value: dict[str, Any]) -> None:
        """A newer write of a dead letter's key, then R26: superseded (R16.3's order)."""
        sender = data.draw(st.sampled_from(self.holding()), label="sender")
        record = self.state["senders"][sender.id]["dlq"][0]
        self.apply(Put(sender.site, record["key"], value))
        self.apply(Redeliver(sender.id))

    def listening(self) -> list[SenderConfig]:
        """The dead-letter senders whose remote can fail an event for good (R7, R24)."""
        assert self.config is not None
        return [
            s
            for s in self.config.senders
            if s.failure_listener == "dlq" and self.config.receiver(s.remote).retry_attempts >= 0
        ]

    @precondition(lambda self: configured(self) and bool(self.listening()))
    @rule(data=st.data(), key=keys, value=values)
    def dead_letter_then_redeliver(
        self, data: st.DataObject, key: str, value: dict[str, Any]
    ) -> None:
        """R16.2, R24 then R26: a write that its remote fails on every attempt becomes a
        dead letter at settle, and is redelivered (requeued: the entry is still its own
        write, unless something newer reached the sender's site meanwhile)."""
        sender = data.draw(st.sampled_from(self.listening()), label="sender")
        assert self.config is not None
        attempts = 1 + self.config.receiver(sender.remote).retry_attempts
        self.apply(Fail(sender.remote, key, EXCEPTIONS[0], attempts))
        self.apply(Put(sender.site, key, value))
        self.apply(Settle())
        self.apply(Redeliver(sender.id))

    # -- end of a run ----------------------------------------------------------------------

    def teardown(self) -> None:
        """Bring every site back (no wipe) and every sender running unpaused (R37), settle,
        and check P2 and P5 (R25, §11)."""
        if self.config is None or self.failed:
            return
        for site in self.config.sites:
            if not self.state["sites"][str(site)]["up"]:
                self.apply(SiteUp(site))
        for sender in self.config.senders:
            seen = self.state["senders"][sender.id]
            if not seen["running"]:
                self.apply(StartSender(sender.id))
            elif seen["paused"]:
                self.apply(ResumeSender(sender.id))
        self.apply(Settle())
        failure = self.run.finish().failure  # P7 on the final state
        if failure is not None:
            self.fail_with([failure.describe()], properties=failure.signature.property != "P1")


def machine_with_impl(factory: EngineFactory, counterexample_dir: Path) -> type[WanConformance]:
    """A copy of the machine that runs `factory`'s engine as the impl (planted bugs)."""
    return type(
        "WanConformanceWith" + getattr(factory, "__name__", "Impl"),
        (WanConformance,),
        {
            "impl_factory": staticmethod(factory),
            "counterexample_dir": counterexample_dir,
            "coverage": Coverage(),
            "last_failure": None,
        },
    )
