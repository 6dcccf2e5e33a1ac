"""ODRP heuristic for large clusters: rounded LP relaxation, then local search on F (Eq. 21).

Moves change the deployment of one operator: add a replica, drop one, move one to another node,
or gather all on one node. A move is scored by updating only that operator's terms, its
streams and the longest path. Best improvement until none is left, then seeded kicks (iterated
local search) for a fixed number of rounds: pure and deterministic (no clock).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from elastream.placement.compact_model import Relaxation, relaxed_choice
from elastream.placement.diagnosis import infeasible, packs
from elastream.placement.evaluator import Deployment, evaluate
from elastream.placement.instance import Instance, Pattern, longest_path
from elastream.placement.model import InfeasibleError, PlacementError
from elastream.placement.solution import Solution

FRESH_NODES = 4  # unused candidate nodes offered to each operator, best static score first
SMALL = 400  # operators x nodes up to which both starts are searched
LP_PATTERNS = 20_000  # deployments x_{i,U} up to which the LP relaxation is solved


class NoStartError(PlacementError):
    """Neither start of the heuristic fits the nodes (a plan may still exist)."""


def _pattern(counts: Counter) -> Pattern:
    return tuple(sorted((u, c) for u, c in counts.items() if c > 0))


class _State:
    """A plan with its cached terms, so that one operator's change is scored cheaply."""

    def __init__(
        self, inst: Instance, deps: list[Pattern], order: list[list[int]] | None = None
    ) -> None:
        self.inst = inst
        self.deps = list(deps)
        self.op_ms = [inst.op_latency_ms(i, d) for i, d in enumerate(deps)]
        self.op_cost = [inst.op_deploy_cost(i, d) for i, d in enumerate(deps)]
        self.terms = [
            inst.edge_terms(e, deps[ed.src], deps[ed.dst]) for e, ed in enumerate(inst.edges)
        ]
        self.used = [0.0] * inst.n_nodes
        self.node_ops = Counter()
        self.links = Counter()
        for i, d in enumerate(deps):
            self._occupy(i, d, +1)
        for e in range(len(inst.edges)):
            self.links.update(self._edge_links(e, deps))
        self.incident = [
            [e for e, ed in enumerate(inst.edges) if i in (ed.src, ed.dst)]
            for i in range(inst.n_ops)
        ]
        self.order = order or [_node_order(inst, i) for i in range(inst.n_ops)]
        self._totals()

    def _occupy(self, i: int, dep: Pattern, sign: int) -> None:
        for u, c in dep:
            self.used[u] += sign * c * self.inst.op_resources[i]
            self.node_ops[u] += sign

    def _edge_links(self, e: int, deps: list[Pattern]) -> list[tuple[int, int]]:
        ed = self.inst.edges[e]
        return [(u, v) for u, _ in deps[ed.src] for v, _ in deps[ed.dst] if u != v]

    def fits(self, i: int, new: Pattern) -> bool:
        """Eq. 23 for operator i's new deployment, the others unchanged."""
        old = dict(self.deps[i])
        res = self.inst.op_resources[i]
        return all(
            self.used[u] + (c - old.get(u, 0)) * res <= self.inst.node_resources[u] + 1e-9
            for u, c in new
        )

    def _totals(self) -> None:
        metric = self.inst.metric
        self.cost = sum(self.op_cost) + sum(t.cost for t in self.terms)
        self.network = sum(t.network(metric) for t in self.terms)
        self.log_a = self._log_a(None, None, None)
        self.value = self.score(None, None)

    def score(self, i: int | None, new: Pattern | None) -> float:
        """F of the current plan, or of the plan with operator i deployed as `new`."""
        inst = self.inst
        if i is None or new is None:
            delays = [t.delay_ms for t in self.terms]
            response = longest_path(inst, self.op_ms, delays)
            return inst.utility.value(response, self.log_a, self.cost, self.network)
        deps = list(self.deps)
        deps[i] = new
        op_ms = list(self.op_ms)
        op_ms[i] = inst.op_latency_ms(i, new)
        cost = self.cost + inst.op_deploy_cost(i, new) - self.op_cost[i]
        network = self.network
        delays = [t.delay_ms for t in self.terms]
        for e in self.incident[i]:
            ed, old = inst.edges[e], self.terms[e]
            term = inst.edge_terms(e, deps[ed.src], deps[ed.dst])
            cost += term.cost - old.cost
            network += term.network(inst.metric) - old.network(inst.metric)
            delays[e] = term.delay_ms
        response = longest_path(inst, op_ms, delays)
        return inst.utility.value(response, self._log_a(i, new, deps), cost, network)

    def _log_a(self, i: int | None, new: Pattern | None, deps: list[Pattern] | None) -> float:
        """Eq. 16 from the usage counters, with operator i's deployment replaced."""
        inst = self.inst
        if not inst.utility.a:  # A does not count in F: skip Eq. 16
            return 0.0
        if i is None or new is None or deps is None:
            total = sum(inst.log_a_node[u] for u, n in self.node_ops.items() if n > 0)
            return total + sum(
                float(inst.log_a_link[u, v]) for (u, v), n in self.links.items() if n > 0
            )
        total = self.log_a
        nodes = Counter(u for u, _ in new)
        nodes.subtract(u for u, _ in self.deps[i])
        for u, change in nodes.items():
            before = self.node_ops[u]
            total += inst.log_a_node[u] * ((before + change > 0) - (before > 0))
        links: Counter = Counter()
        for e in self.incident[i]:
            links.update(self._edge_links(e, deps))
            links.subtract(self._edge_links(e, self.deps))
        for (u, v), change in links.items():
            before = self.links[(u, v)]
            total += float(inst.log_a_link[u, v]) * ((before + change > 0) - (before > 0))
        return total

    def apply(self, i: int, new: Pattern) -> None:
        inst = self.inst
        for e in self.incident[i]:
            self.links.subtract(self._edge_links(e, self.deps))
        self._occupy(i, self.deps[i], -1)
        self.deps[i] = new
        self._occupy(i, new, +1)
        self.op_ms[i] = inst.op_latency_ms(i, new)
        self.op_cost[i] = inst.op_deploy_cost(i, new)
        for e in self.incident[i]:
            ed = inst.edges[e]
            self.terms[e] = inst.edge_terms(e, self.deps[ed.src], self.deps[ed.dst])
            self.links.update(self._edge_links(e, self.deps))
        self._totals()


@dataclass(frozen=True)
class Heuristic:
    """Greedy start plus iterated best-improvement local search (deterministic, seeded)."""

    name: str = "heuristic"
    kicks: int = 2
    max_rounds: int = 200
    seed: int = 0

    def solve(self, inst: Instance, time_limit_s: float, gap: float) -> Solution:
        try:
            return self.search(inst, time_limit_s)
        except NoStartError:
            raise _no_start(inst, self.name, time_limit_s) from None

    def search(
        self, inst: Instance, time_limit_s: float, relaxed: Relaxation | None = None
    ) -> Solution:
        """The heuristic plan; `relaxed`: the LP relaxation when the caller has solved it."""
        best: tuple[float, list[Pattern]] | None = None
        evaluations = 0
        for start in _starts(inst, time_limit_s, relaxed):
            state = _State(inst, start)
            evaluations += _improve(state, self.max_rounds)
            if best is None or state.value > best[0] + 1e-12:
                best = (state.value, list(state.deps))
        if best is None:
            raise NoStartError(f"{self.name}: no start fits the nodes")
        state = _State(inst, best[1])
        rng = np.random.default_rng(self.seed)
        for _ in range(self.kicks):
            _kick(state, rng)
            evaluations += _improve(state, self.max_rounds)
            if state.value > best[0] + 1e-12:
                best = (state.value, list(state.deps))
            else:
                state = _State(inst, best[1])
        plan = Deployment(tuple(best[1]))
        value = evaluate(inst, plan).utility
        return Solution(self.name, plan, value, False, "Heuristic", evaluations=evaluations)


def _no_start(inst: Instance, name: str, time_limit_s: float) -> PlacementError:
    """No start fits: say why if no plan exists at all, else point to an exact solver."""
    found = packs(inst, list(range(inst.n_ops)), time_limit_s)
    if found is False:
        return infeasible(inst, f"{name} (its packing check)", time_limit_s)
    return NoStartError(
        f"{name}: its starts (rounded LP, greedy first fit) do not fit the nodes, but "
        f"a placement {'exists' if found else 'may exist'}: use --solver compact or exact"
    )


def _starts(inst: Instance, time_limit_s: float, relaxed: Relaxation | None) -> list[list[Pattern]]:
    """The rounded LP relaxation of the compact model when it is not too big; also the greedy
    start on small instances or when the LP is skipped."""
    starts = []
    small = inst.n_ops * inst.n_nodes <= SMALL
    makers = [_greedy_start]
    if relaxed is not None:
        makers.insert(0, lambda i: _rounded_lp(i, relaxed))
    elif sum(inst.pattern_count(i) for i in range(inst.n_ops)) <= LP_PATTERNS:
        makers.insert(0, lambda i: _rounded_lp(i, relaxed_choice(i, time_limit_s)))
    for make in makers:
        if starts and not small:
            break
        try:
            starts.append(make(inst))
        except InfeasibleError:
            continue
    return starts


def _rounded_lp(inst: Instance, choice: Relaxation) -> list[Pattern]:
    """Round the LP relaxation: most decided operators first, largest fitting x_{i,U}."""
    used = [0.0] * inst.n_nodes
    deps: dict[int, Pattern] = {}
    for i in sorted(range(inst.n_ops), key=lambda i: -choice[i][0][0]):
        res = inst.op_resources[i]
        for _, pat in choice[i]:
            if all(used[u] + c * res <= inst.node_resources[u] + 1e-9 for u, c in pat):
                deps[i] = pat
                for u, c in pat:
                    used[u] += c * res
                break
        else:
            raise InfeasibleError(f"LP rounding: no room for {inst.op_names[i]!r}")
    return [deps[i] for i in range(inst.n_ops)]


def _node_order(inst: Instance, i: int) -> list[int]:
    """Candidate nodes of i, best first: speed-up, availability, room."""
    return sorted(
        inst.candidates[i],
        key=lambda u: (-inst.speedup[u], -inst.log_a_node[u], -inst.node_resources[u], u),
    )


def _greedy_start(inst: Instance) -> list[Pattern]:
    """Minimum replicas; pinned operators first, then each on its busiest upstream's node."""
    used = [0.0] * inst.n_nodes
    deps: dict[int, Pattern] = {}
    pinned = [i for i in range(inst.n_ops) if len(inst.candidates[i]) == 1]
    for i in pinned + [i for i in range(inst.n_ops) if i not in pinned]:
        need = inst.min_replicas[i]
        res = inst.op_resources[i]
        upstream = sorted((ed for ed in inst.edges if ed.dst == i), key=lambda ed: -ed.rate)
        preferred = [
            u for ed in upstream for u, _ in deps.get(ed.src, ()) if u in inst.candidates[i]
        ]
        counts: Counter = Counter()
        for u in [*preferred, *_node_order(inst, i)]:
            while need and used[u] + res <= inst.node_resources[u] + 1e-9:
                used[u] += res
                counts[u] += 1
                need -= 1
        if need:
            raise InfeasibleError(
                f"heuristic: no room for operator {inst.op_names[i]!r} "
                f"({inst.min_replicas[i]} replica(s)); try an exact solver"
            )
        deps[i] = _pattern(counts)
    return [deps[i] for i in range(inst.n_ops)]


def _moves(state: _State, i: int) -> list[Pattern]:
    """Deployments of i one move away: add, drop, move one replica, or gather all on a node."""
    inst = state.inst
    current = Counter(dict(state.deps[i]))
    size = sum(current.values())
    active = {u for u, n in state.node_ops.items() if n > 0}
    fresh = [u for u in state.order[i] if u not in active][:FRESH_NODES]
    targets = [u for u in inst.candidates[i] if u in active] + fresh
    out: set[Pattern] = set()
    for v in targets:
        if size < inst.max_replicas[i]:
            out.add(_pattern(current + Counter({v: 1})))
        for count in range(inst.min_replicas[i], inst.max_replicas[i] + 1):
            out.add(((v, count),))
        for u in list(current):
            if u != v:
                moved = current.copy()
                moved[u] -= 1
                moved[v] += 1
                out.add(_pattern(moved))
    if size > inst.min_replicas[i]:
        for u in list(current):
            out.add(_pattern(current - Counter({u: 1})))
    out.discard(state.deps[i])
    return [p for p in out if state.fits(i, p)]


def _improve(state: _State, max_rounds: int) -> int:
    """Local search, then node evacuations, until neither improves F."""
    scored = _descend(state, max_rounds)
    while _evacuate(state) or _swap(state) or _merge(state):
        scored += _descend(state, max_rounds)
    return scored


def _merge(state: _State) -> bool:
    """Move everything on node u to node h; operators that no longer fit on h go to u."""
    inst = state.inst
    active = sorted(u for u, n in state.node_ops.items() if n > 0)
    for u, h in itertools.permutations(active, 2):
        deps = _merged(state, u, h)
        if deps is None:
            continue
        trial = _State(inst, deps, state.order)
        if trial.value > state.value + 1e-12:
            for i in range(inst.n_ops):
                if deps[i] != state.deps[i]:
                    state.apply(i, deps[i])
            return True
    return False


def _merged(state: _State, u: int, h: int) -> list[Pattern] | None:
    """The deployments after merging node u into h with ejections to u; None if impossible."""
    inst = state.inst
    deps = list(state.deps)
    used = list(state.used)
    moved = set()
    for i, dep in enumerate(deps):
        copies = dict(dep).get(u, 0)
        if not copies:
            continue
        if h not in inst.candidates[i]:
            return None
        counts = Counter(dict(dep))
        del counts[u]
        counts[h] += copies
        deps[i] = _pattern(counts)
        used[u] -= copies * inst.op_resources[i]
        used[h] += copies * inst.op_resources[i]
        moved.add(i)
    if not moved:
        return None
    ejectable = sorted(
        (
            i
            for i, dep in enumerate(deps)
            if i not in moved
            and dep == state.deps[i]
            and len(dep) == 1
            and dep[0][0] == h
            and u in inst.candidates[i]
        ),
        key=lambda i: deps[i][0][1] * inst.op_resources[i],
    )
    for i in ejectable:
        if used[h] <= inst.node_resources[h] + 1e-9:
            break
        need = deps[i][0][1] * inst.op_resources[i]
        if used[u] + need > inst.node_resources[u] + 1e-9:
            continue
        deps[i] = ((u, deps[i][0][1]),)
        used[h] -= need
        used[u] += need
    fits = used[h] <= inst.node_resources[h] + 1e-9
    return deps if fits else None


def _swap(state: _State) -> bool:
    """Exchange the nodes of two operators that each sit on one node, if that raises F."""
    inst = state.inst
    single = [i for i, dep in enumerate(state.deps) if len(dep) == 1]
    for a, i in enumerate(single):
        for j in single[a + 1 :]:
            (u, cu), (v, cv) = state.deps[i][0], state.deps[j][0]
            if u == v or v not in inst.candidates[i] or u not in inst.candidates[j]:
                continue
            old_i, old_j, before = state.deps[i], state.deps[j], state.value
            new_i, new_j = ((v, cu),), ((u, cv),)
            if not _room_after_swap(state, i, j, new_i, new_j):
                continue
            state.apply(i, new_i)
            if state.score(j, new_j) > before + 1e-12:
                state.apply(j, new_j)
                return True
            state.apply(i, old_i)
            state.deps[j] = old_j
    return False


def _room_after_swap(state: _State, i: int, j: int, new_i: Pattern, new_j: Pattern) -> bool:
    """Eq. 23 after operators i and j trade nodes."""
    inst = state.inst
    used = list(state.used)
    for op, old, new in ((i, state.deps[i], new_i), (j, state.deps[j], new_j)):
        for u, c in old:
            used[u] -= c * inst.op_resources[op]
        for u, c in new:
            used[u] += c * inst.op_resources[op]
    return all(used[u] <= inst.node_resources[u] + 1e-9 for u in range(inst.n_nodes))


def _descend(state: _State, max_rounds: int) -> int:
    """Best-improvement local search; returns the number of moves scored."""
    scored = 0
    for _ in range(max_rounds):
        best: tuple[float, int, Pattern] | None = None
        for i in range(state.inst.n_ops):
            for new in _moves(state, i):
                value = state.score(i, new)
                scored += 1
                if value > state.value + 1e-12 and (best is None or value > best[0]):
                    best = (value, i, new)
        if best is None:
            break
        state.apply(best[1], best[2])
    return scored


def _evacuate(state: _State) -> bool:
    """Empty one active node (moving its replicas to other active nodes) if that raises F."""
    inst = state.inst
    active = sorted(u for u, n in state.node_ops.items() if n > 0)
    for u in active:
        trial = _State(inst, state.deps, state.order)
        moved = True
        for i in range(inst.n_ops):
            copies = dict(trial.deps[i]).get(u, 0)
            if not copies:
                continue
            rest = Counter(dict(trial.deps[i]))
            del rest[u]
            homes = [v for v in inst.candidates[i] if v != u and v in active]
            homes.sort(key=lambda v: (-rest[v], -inst.speedup[v], v))
            for v in homes:
                room = int((inst.node_resources[v] - trial.used[v]) // inst.op_resources[i])
                take = min(copies, max(0, room))
                rest[v] += take
                copies -= take
            if copies:
                moved = False
                break
            trial.apply(i, _pattern(rest))
        if moved and trial.value > state.value + 1e-12:
            for i in range(inst.n_ops):
                if trial.deps[i] != state.deps[i]:
                    state.apply(i, trial.deps[i])
            return True
    return False


def _kick(state: _State, rng: np.random.Generator) -> None:
    """Perturb: apply a random feasible move to a few random operators."""
    inst = state.inst
    for _ in range(max(1, math.ceil(inst.n_ops / 5))):
        i = int(rng.integers(0, inst.n_ops))
        moves = _moves(state, i)
        if moves:
            state.apply(i, moves[int(rng.integers(0, len(moves)))])
