"""Property-based protocol tests: hypothesis drives thousands of interleavings of decisions,
message deliveries and tuple movements on random pipelines and checks the invariants after every
step; the same machine with FIFO, acks or the keeper removed must be caught breaking one."""

import random

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from elastream.decentral.memory import Cluster
from elastream.decentral.node import ProtocolError

PICK = st.integers(min_value=0, max_value=10**6)


class ProtocolMachine(RuleBasedStateMachine):
    """Random schedules over one in-memory cluster; subclasses switch off one assumption."""

    fifo, acks, keepers, guards = True, True, True, True

    @initialize(sizes=st.lists(st.integers(1, 3), min_size=1, max_size=4))
    def setup(self, sizes):
        self.c = Cluster.pipeline(
            self.shape(sizes), self.fifo, self.acks, self.keepers, self.guards
        )

    def shape(self, sizes):
        return sizes

    def _pick(self, items, i):
        return items[i % len(items)] if items else None

    @rule(i=PICK, k=st.integers(1, 3))
    def duplicate(self, i, k):
        nid = self._pick([n for n in self.c.live() if self.c.nodes[n].can_decide()], i)
        if nid is not None:
            self.c.scale_out(nid, k)

    @rule(i=PICK)
    def delete(self, i):
        nid = self._pick([n for n in self.c.live() if self.c.nodes[n].can_scale_in()], i)
        if nid is not None:
            self.c.scale_in(nid)

    @rule(i=PICK, j=PICK)
    def deliver(self, i, j):
        ch = self._pick(self.c.net.busy_channels(), i)
        if ch is not None:
            self.c.deliver(ch, 0 if self.fifo else j)

    @rule(i=PICK, j=PICK)
    def deliver_again(self, i, j):  # deliveries twice as likely as other actions
        self.deliver(i, j)

    @rule(i=PICK, n=st.integers(1, 3))
    def inject(self, i, n):
        nid = self._pick([x for x in self.c.live(0) if self.c.nodes[x].active], i)
        if nid is not None:
            self.c.inject(nid, n)

    @rule(i=PICK, choice=PICK)
    def process(self, i, choice):
        nid = self._pick([n for n in self.c.live() if self.c.nodes[n].queue], i)
        if nid is not None:
            self.c.process(nid, choice)

    @invariant()
    def safety(self):
        assert self.c.violations == [], (
            self.c.violations
        )  # no message to a terminated/unknown node, idle never sends
        assert self.c.tuples_accounted() == 0  # no tuple vanished
        assert self.c.lost == []
        assert self.c.keeper_alive() == [], (
            self.c.keeper_alive()
        )  # every operator keeps an active instance

    def teardown(self):
        if not hasattr(self, "c"):
            return
        self.c.drain()  # let the system become quiet: every message and tuple delivered
        assert self.c.violations == [], self.c.violations
        assert self.c.view_errors() == [], self.c.view_errors()  # views converge to the true graph
        assert sorted(self.c.sunk) == list(range(self.c.injected))  # every tuple reached the end


def run(machine, examples, steps=40, shrink=True):
    phases = list(Phase) if shrink else [Phase.generate]
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=examples,
            stateful_step_count=steps,
            deadline=None,
            database=None,
            derandomize=True,
            phases=phases,
            suppress_health_check=list(HealthCheck),
        ),
    )


def test_protocol_invariants_hold_on_random_schedules():
    run(ProtocolMachine, examples=250, steps=50)  # 250 schedules, up to 12,500 steps


def random_schedules(machine, count, steps, seed):
    """The machine's rules driven by a seeded random walk (no shrinking, but cheap: thousands of
    schedules in seconds); returns the number of steps run."""
    rng = random.Random(seed)
    done = 0
    for _ in range(count):
        m = machine()
        m.setup([rng.randint(1, 4) for _ in range(rng.randint(1, 5))])
        rules = [m.duplicate, m.delete, m.deliver, m.deliver, m.deliver, m.inject, m.process]
        for _ in range(rng.randint(1, steps)):
            rule = rng.choice(rules)
            i = rng.randrange(10**6)
            if rule == m.delete:
                rule(i)
            elif rule in (m.duplicate, m.inject):
                rule(i, rng.randint(1, 3))
            else:
                rule(i, rng.randrange(10**6))
            m.safety()
            done += 1
        m.teardown()
    return done


def test_protocol_invariants_hold_on_thousands_of_random_walks():
    assert random_schedules(ProtocolMachine, count=1000, steps=60, seed=13) > 20_000


@pytest.mark.slow
def test_protocol_invariants_hold_on_many_more_schedules():
    run(ProtocolMachine, examples=1500, steps=60)


class NoFifo(ProtocolMachine):
    fifo = False


class NoAcks(ProtocolMachine):
    acks = False


class NoKeeper(ProtocolMachine):
    keepers = False


class PaperLiteral(ProtocolMachine):
    """The protocol exactly as written (no leave guards): adjacent deletions lose tuples."""

    guards = False

    def shape(self, sizes):  # the race needs two operators with a non-keeper instance each
        return [max(2, n) for n in [*sizes, 2][: max(2, len(sizes))]]


# views diverge, a message reaches a terminated node, a node waits forever, or a node gets a
# message its protocol state cannot accept
DIVERGES = r"reached terminated|succs|preds|waits to hear|unexpected|never saw"


@pytest.mark.parametrize(
    ("machine", "broken"),
    [
        (NoFifo, DIVERGES),
        (NoAcks, DIVERGES),
        (NoKeeper, r"has no active instance"),
        (PaperLiteral, r"Data from \S+ reached terminated"),
    ],
    ids=["no-fifo", "no-acks", "no-keeper", "paper-without-guards"],
)
def test_removing_an_assumption_breaks_an_invariant(machine, broken):
    with pytest.raises((AssertionError, ProtocolError), match=broken):
        run(machine, examples=600, shrink=False)
