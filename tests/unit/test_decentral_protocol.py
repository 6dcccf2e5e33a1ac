"""The scale-out / scale-in protocol on explicit schedules: Section 4.3's races, the FIFO
counter-example of Fig. 2, and the message count of one scale-out phase (Section 5.4)."""

import random

import pytest

from elastream.decentral.memory import Cluster
from elastream.decentral.messages import Data, Deletion, Duplication, DuplicationAck, NodeId, Start
from elastream.decentral.node import ProtocolError

N1, N2, K1 = NodeId(0, (1,)), NodeId(1, (1,)), NodeId(1, (0,))
N1_NEW = N1.child(0)


def head(c, src, dst):
    return c.net.channels[(src, dst)][0].msg


def settle_and_check(c):
    c.drain()
    for nid in c.live(0):
        c.inject(nid, 5)
    c.drain()
    assert c.violations == []
    assert c.view_errors() == []
    assert sorted(c.sunk) == list(range(c.injected))


def test_race_duplication_vs_neighbour_deletion_case1():
    """N2 sends its deletion before processing N1's duplication (Section 4.3, case 1)."""
    c = Cluster.pipeline([2, 2])
    c.scale_out(N1, 1)
    c.scale_in(N2)
    assert isinstance(head(c, N2, N1), Deletion)
    c.deliver((N1, N2))  # N2 processes the duplication: N1_NEW becomes its pred, ack queued
    c.deliver((N1, K1))
    c.deliver((K1, N1))
    c.deliver((N2, N1))  # FIFO: the deletion reaches N1 before N2's ack
    assert N2 not in c.node(N1).succs
    c.deliver((N2, N1))  # the ack: N1 now has every ack and starts N1_NEW without N2
    start = head(c, N1, N1_NEW)
    assert isinstance(start, Start) and N2 not in start.succs
    settle_and_check(c)
    assert c.node(N2).terminated and c.node(N1_NEW).active


def test_race_duplication_vs_neighbour_deletion_case2():
    """N2 processes N1's duplication first, so its deletion also reaches the idle N1_NEW."""
    c = Cluster.pipeline([2, 2])
    c.scale_out(N1, 1)
    c.deliver((N1, N2))  # N2 learns N1_NEW as a predecessor
    c.scale_in(N2)  # ... and tells it too
    assert (N2, N1_NEW) in c.net.channels
    c.deliver((N1, K1))
    c.deliver((K1, N1))
    c.deliver((N2, N1))  # the ack first: N1 still counts N2 as a successor of N1_NEW
    start = head(c, N1, N1_NEW)
    assert N2 in start.succs
    c.deliver((N2, N1_NEW))  # N1_NEW, not yet active, stores N2 in succsToDelete (Alg. 9 l. 6)
    assert c.node(N1_NEW).succs_to_delete == {N2}
    c.deliver((N1, N1_NEW))  # start: N2 is removed (Alg. 7)
    assert N2 not in c.node(N1_NEW).succs
    settle_and_check(c)


@pytest.mark.parametrize("crossed", [True, False])
def test_two_concurrent_duplications(crossed):
    a, b = NodeId(0, (0,)), NodeId(1, (0,))
    c = Cluster.pipeline([1, 1])
    c.scale_out(a, 1)
    if not crossed:
        c.deliver((a, b))  # b learns a's new sibling before it duplicates itself
    c.scale_out(b, 2)
    c.drain()
    assert c.violations == [] and c.view_errors() == []
    assert len(c.live(0)) == 2 and len(c.live(1)) == 3
    settle_and_check(c)


def test_fig2_without_fifo_a_tuple_reaches_a_terminated_node():
    """The paper's Fig. 2: the ack overtakes the deletion on a non-FIFO channel."""
    c = Cluster.pipeline([2, 2], fifo=False)
    c.scale_out(N1, 1)
    c.scale_in(N2)
    c.deliver((N1, N2))  # N2 acks after having sent its deletion: channel holds [deletion, ack]
    assert isinstance(c.net.channels[(N2, N1)][1].msg, DuplicationAck)
    c.deliver((N1, K1))
    c.deliver((K1, N1))
    c.deliver((N2, N1), index=1)  # the ack overtakes the deletion
    c.deliver((N1, N1_NEW))  # N1_NEW starts with N2 among its successors
    assert N2 in c.node(N1_NEW).succs
    c.deliver((N2, N1))  # the late deletion; N1 and the keeper ack, N2 terminates
    c.deliver((N1, N2))
    c.deliver((N2, NodeId(0, (0,))))
    c.deliver((NodeId(0, (0,)), N2))
    assert c.node(N2).terminated
    c.node(N1_NEW).queue.append(c.injected)
    c.injected += 1
    c.process(N1_NEW, choice=sorted(c.node(N1_NEW).succs).index(N2))
    c.deliver((N1_NEW, N2))
    assert c.lost == [0]
    assert any("reached terminated" in v for v in c.violations)


def test_without_acks_a_deletion_loses_an_in_flight_tuple():
    c = Cluster.pipeline([1, 2], acks=False)
    src = NodeId(0, (0,))
    c.inject(src, 2)
    c.process(src)  # tuple 0 -> o1/0, tuple 1 -> o1/1 (round robin)
    c.process(src)
    c.scale_in(N2)  # no ack to wait for: N2 leaves at once
    c.drain()
    assert c.lost == [1]
    # with acks, the same schedule loses nothing: the tuple precedes the ack on the FIFO channel
    ok = Cluster.pipeline([1, 2])
    ok.inject(src, 2)
    ok.process(src)
    ok.process(src)
    ok.scale_in(N2)
    ok.drain()
    assert ok.lost == [] and sorted(ok.sunk) == [0, 1]


def test_protocol_errors_name_the_node():
    c = Cluster.pipeline([1, 1])
    with pytest.raises(ProtocolError, match=r"o1/0 is its operator's keeper"):
        c.scale_in(NodeId(1, (0,)))
    c.scale_out(NodeId(1, (0,)), 1)
    with pytest.raises(ProtocolError, match="busy"):
        c.scale_out(NodeId(1, (0,)), 1)
    with pytest.raises(ValueError, match="only delivers its head"):
        c.deliver((NodeId(1, (0,)), NodeId(0, (0,))), index=1)
    with pytest.raises(ValueError, match="operator-0"):
        c.inject(NodeId(1, (0,)))


def expected_scale_out_messages(k: int, n: int, succs: int, preds: int) -> int:
    """Section 5.4: one scale-out phase of k new siblings among n instances."""
    return 2 * min(k, n) * (succs + preds) + k


def test_scale_out_message_count_formula_on_random_cases():
    rng = random.Random(2019)
    for _ in range(300):
        sizes = [rng.randint(1, 6) for _ in range(rng.randint(1, 5))]
        op = rng.randrange(len(sizes))
        n, k = sizes[op], rng.randint(1, 3 * sizes[op])
        c = Cluster.pipeline(sizes)
        dups = min(k, n)
        for j in range(dups):  # k < n: k instances make one each; else all n share the k
            c.scale_out(NodeId(op, (j,)), k // dups + (j < k % dups))
        c.drain()
        succs = sizes[op + 1] if op + 1 < len(sizes) else 0
        preds = sizes[op - 1] if op > 0 else 0
        assert sum(c.sent.values()) == expected_scale_out_messages(k, n, succs, preds), sizes
        assert c.sent["Duplication"] == c.sent["DuplicationAck"] == dups * (succs + preds)
        assert c.sent["Start"] == k and len(c.live(op)) == n + k
        assert c.view_errors() == []


def test_scale_in_costs_two_messages_per_neighbour():
    c = Cluster.pipeline([3, 4, 2])
    c.scale_in(NodeId(1, (3,)))
    c.drain()
    # the paper's 2 (|succs| + |preds|), plus our Close to each of the 2 successors
    assert dict(c.sent) == {"Deletion": 5, "DeletionAck": 5, "Close": 2}
    assert not any(isinstance(e.msg, Duplication | Data) for e in c.net.in_flight())


def adjacent_deletions(guards: bool) -> Cluster:
    """Found by the property-based test: P leaves; its successor S acks, then leaves too."""
    p, s = NodeId(0, (1,)), NodeId(1, (1,))
    c = Cluster.pipeline([2, 2], guards=guards)
    c.scale_in(p)
    c.deliver((p, s))  # S forgets P and acks; P still holds S as a successor
    if not guards:
        c.scale_in(s)  # S's deletion goes to its remaining neighbours only, not to P
        c.deliver((s, NodeId(0, (0,))))
        c.deliver((NodeId(0, (0,)), s))  # S has every ack it waits for: it terminates
    c.inject(p, 2)  # P is still active (it waits for the keeper's ack) and receives tuples
    c.drain()  # ... and flushes them round robin, one to S
    return c


def test_adjacent_deletions_lose_a_tuple_in_the_paper_protocol():
    c = adjacent_deletions(guards=False)
    assert c.lost and any("reached terminated o1/1" in v for v in c.violations)


def test_close_defers_the_successor_deletion_until_the_predecessor_is_gone():
    p, s = NodeId(0, (1,)), NodeId(1, (1,))
    c = Cluster.pipeline([2, 2])
    c.scale_in(p)
    c.deliver((p, s))
    assert c.node(s).awaiting_close == {p}
    with pytest.raises(ProtocolError, match="before hearing from o0/1"):
        c.scale_in(s)
    c.inject(p, 2)
    c.drain()
    assert c.lost == [] and c.violations == [] and sorted(c.sunk) == [0, 1]
    assert c.node(s).awaiting_close == set()  # P's Close arrived after its last tuple
    c.scale_in(s)
    c.drain()
    assert c.view_errors() == [] and c.lost == []


def new_sibling_leaves_early(guards: bool) -> Cluster:
    """Found by the random walks: S acks A's duplication, then announces its deletion to A and
    to A's new sibling N; A starts N (without S) before S's Deletion reaches N."""
    a, k, s = NodeId(0, (0,)), NodeId(1, (0,)), NodeId(1, (1,))
    new = a.child(0)
    c = Cluster.pipeline([1, 2], guards=guards)
    c.scale_out(a, 1)
    c.deliver((a, s))  # S learns N and acks
    c.scale_in(s)  # S's Deletion goes to A and to N (Section 4.3, case 2)
    c.deliver((s, a))  # the ack ...
    c.deliver((s, a))  # ... then the deletion: A drops S before starting N
    c.deliver((a, k))
    c.deliver((k, a))  # last ack: A starts N without S
    c.deliver((a, new))  # the start overtakes S's Deletion (another channel)
    assert c.node(new).active and s not in c.node(new).succs
    return c


def test_a_new_sibling_that_leaves_early_strands_a_deletion_in_the_paper_protocol():
    c = new_sibling_leaves_early(guards=False)
    new = NodeId(0, (0, 0))
    c.scale_in(new)  # it knows only K, so it leaves after K's ack
    c.deliver((new, NodeId(1, (0,))))
    c.deliver((NodeId(1, (0,)), new))
    assert c.node(new).terminated
    c.drain()  # S's Deletion finally reaches N
    assert any(f"Deletion from o1/1 reached terminated {new}" in v for v in c.violations)
    assert c.node(NodeId(1, (1,))).busy  # S waits forever for the ack of the terminated N


def test_the_new_sibling_waits_for_the_announced_deletion():
    c = new_sibling_leaves_early(guards=True)
    new = NodeId(0, (0, 0))
    assert c.node(new).awaiting_deletion == {NodeId(1, (1,))}
    with pytest.raises(ProtocolError, match="before hearing from o1/1"):
        c.scale_in(new)
    c.deliver((NodeId(1, (1,)), new))  # S's Deletion arrives: N acks it and may leave now
    c.scale_in(new)
    c.drain()
    assert c.violations == [] and c.view_errors() == []
    assert c.live() == [NodeId(0, (0,)), NodeId(1, (0,))]
