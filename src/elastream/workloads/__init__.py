"""Input rates over time: trace loaders, generators and their rescaling."""

from elastream.workloads.trace import Trace

__all__ = ["Trace"]
