"""Executors as hosts billed per BTU, on a fake cluster (the real one: tests/spark/test_cluster.py,
the leased run): BTUs, cost and re-leases of a run, and the cost a snapshot carries."""

from elastream.control.policy import Lease
from elastream.leasing.hosts import HostType
from elastream.runtime.spark.hosts import ExecutorHosts

KIND = HostType(cores=2, btu_s=60.0, price=2.5)


class FakeExecutors:
    """A cluster whose executors register when `start` is called, ids counted from 1."""

    def __init__(self, live: int) -> None:
        self.live = [str(i) for i in range(1, live + 1)]
        self.target = live

    def ids(self) -> list[str]:
        return list(self.live)

    def set_total(self, n: int) -> bool:
        self.target = n
        return True

    def decommission(self, executor_id: str) -> bool:
        self.live.remove(executor_id)
        return True

    def start(self) -> None:
        self.live.append(str(int(max(self.live, key=int)) + 1))


def test_a_runs_btus_cost_and_re_leases_and_the_cost_a_snapshot_carries():
    executors = FakeExecutors(live=1)
    hosts = ExecutorHosts(executors, KIND)  # type: ignore[arg-type]
    hosts.adopt(1)  # host 1 from 0 s
    hosts.enact((Lease("executor", 1),), now=10.0)  # host 2 leased at 10 s
    executors.start()
    hosts.poll(16.0)  # ... up at 16 s
    hosts.release("executor-host-2", now=65.0)  # held 55 s: one BTU, paid until 70 s
    assert hosts.clocks(90.0)["host_re_leases"] == 0
    hosts.enact((Lease("executor", 1),), now=100.0)  # within a BTU of 70 s: a re-lease
    assert hosts.clocks(100.0)["host_re_leases"] == 1  # a snapshot carries it from then on
    # by hand: host 1, 0-130 s: 3 BTUs; host 2, 10-65 s: 1; host 3, 100-130 s: 1
    assert hosts.btus(130.0) == 5
    assert hosts.clocks(130.0)["host_cost"] == 5 * 2.5
    totals = hosts.run_totals(130.0)
    assert totals["host_btus"] == 5
    assert totals["host_cost"] == 5 * 2.5
    assert totals["hosts_leased"] == 3
    assert totals["host_boot_s"] == 6.0
    assert totals["host_re_leases"] == 1


def test_a_lease_a_btu_after_the_paid_end_is_not_a_re_lease():
    executors = FakeExecutors(live=2)
    hosts = ExecutorHosts(executors, KIND)  # type: ignore[arg-type]
    hosts.adopt(2)
    hosts.release("executor-host-2", now=58.0)  # paid until 60 s
    hosts.enact((Lease("executor", 1),), now=120.0)  # 60 s after the paid end: a new need
    assert hosts.run_totals(125.0)["host_re_leases"] == 0
