"""Keyed state: key groups and their owners, the state handle, and how an operator function gets
it (its writes undone when a call fails)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from support.builders import linear_pipeline

from elastream.model.events import Event, OutcomeKind
from elastream.model.grouping import group_owner, group_range, key_group, key_groups
from elastream.model.pipeline import Grouping, TopologyError, pipeline_from_dict
from elastream.model.state import KeyedState, StateError, decode_value
from elastream.runtime.operators import OperatorContext, apply_operator, events_batch


def stateful_pipeline(function: str, **extra) -> dict:
    data = linear_pipeline(1)
    data["operators"][0].update(function=function, grouping="key_hash", stateless=False, **extra)
    return data


@pytest.mark.parametrize(("groups", "replicas"), [(128, 1), (128, 3), (128, 7), (5, 5), (7, 4)])
def test_replicas_own_contiguous_ranges_that_cover_every_group_once(groups, replicas):
    ranges = [group_range(j, replicas, groups) for j in range(replicas)]
    assert [g for r in ranges for g in r] == list(range(groups))
    assert all(len(r) >= 1 for r in ranges)
    assert max(map(len, ranges)) - min(map(len, ranges)) <= 1
    for j, owned in enumerate(ranges):
        assert {group_owner(g, replicas, groups) for g in owned} == {j}


def test_an_event_goes_to_the_owner_of_its_keys_group():
    keys = [f"user-{i}" for i in range(500)]
    for replicas in (1, 2, 3, 4):
        owners = key_groups(keys, replicas, 128)
        for key, owner in zip(keys, owners, strict=True):
            assert key_group(key, 128) in group_range(owner, replicas, 128)


def test_key_groups_are_the_same_in_every_process():
    """Python's own hash of a string changes with PYTHONHASHSEED; the key group must not."""
    code = "from elastream.model.grouping import key_group; print(key_group('user-1', 128))"
    seen = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for seed in ("1", "2")
    }
    assert seen == {str(key_group("user-1", 128))}


def test_stateful_operators_declare_enough_key_groups():
    spec = pipeline_from_dict(stateful_pipeline("elastream.examples.keyed:count")).operator("op1")
    assert (spec.key_groups, spec.grouping) == (128, Grouping.KEY_HASH)
    with pytest.raises(TopologyError, match=r"key_groups \(2\) < replicas.max \(4\)"):
        pipeline_from_dict(stateful_pipeline("elastream.examples.keyed:count", key_groups=2))
    no_state = pipeline_from_dict(stateful_pipeline("elastream.examples.synthetic:passthrough"))
    with pytest.raises(TopologyError, match="has no 'state' keyword parameter"):
        no_state.check_imports()


def test_the_handle_reads_committed_values_and_keeps_its_writes_apart():
    state = KeyedState("count", 8, ["a", "b", "c"], {"a": b"\x05"})
    value = state.get("a")
    assert (value, state.get("b"), state.get("b", 0), "a" in state, "b" in state) == (
        5,
        None,
        0,
        True,
        False,
    )
    state.put("b", {"n": [1, 2]})
    state.get("b")["n"].append(3)  # a copy: changes nothing until put
    state.delete("a")
    assert list(state.items()) == [("b", {"n": [1, 2]})]
    writes = state.writes()
    assert [(w.key, w.value is None) for w in writes] == [("a", True), ("b", False)]
    assert [w.group for w in writes] == [key_group("a", 8), key_group("b", 8)]
    assert decode_value(writes[1].value) == {"n": [1, 2]}


def test_the_handle_refuses_foreign_keys_and_values_it_cannot_store():
    state = KeyedState("count", 8, ["a"], {})
    with pytest.raises(StateError, match="operator 'count': key 'z' is not a key of this batch"):
        state.get("z")
    with pytest.raises(StateError, match="key 'a': cannot store object"):
        state.put("a", object())
    with pytest.raises(StateError, match="None is not a value"):
        state.put("a", None)


def counting_or_failing(events: list[Event], state: KeyedState):
    """Counts per key, and fails on index 3 after writing its count."""
    out = []
    for e in events:
        state.put(e.key, state.get(e.key, 0) + 1)
        if e.payload["i"] == 3:
            raise ValueError("three is bad")
        out.append(e.emit(e.payload))
    return out


def test_a_failed_call_leaves_no_state_behind():
    spec = pipeline_from_dict(stateful_pipeline(f"{__name__}:counting_or_failing")).operator("op1")
    ctx = OperatorContext(spec, counting_or_failing, {}, {"out": ("sink",)}, None)
    batch = [Event(i, "k0" if i % 2 else "k1", 0.0, {"i": i}) for i in range(6)]
    state = KeyedState("op1", 128, ["k0", "k1"], {})
    columns = events_batch(batch)
    applied = apply_operator(ctx, columns, state)
    outcomes = applied.outcomes(columns)
    assert [o.kind for o in outcomes].count(OutcomeKind.ERROR) == 1 and len(applied.errors) == 1
    # e3 (key k0) failed alone: its increment is undone, the batch's first attempt left nothing
    assert dict(state.items()) == {"k0": 2, "k1": 3}
