"""Asynchronous modelling jobs: run on worker threads, identical requests served from cache."""

from __future__ import annotations

import hashlib
import threading
import traceback
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from pydantic import BaseModel

from elastream.service.schemas import JobStatus


@dataclass
class _Job:
    job_id: str
    kind: str
    status: str = "pending"
    result: dict | None = None
    error: str | None = None


class JobManager:
    """Jobs keyed by (kind, request, history version): a repeat of a pending or done job gets
    the same job back; a failed one is run again. The oldest finished jobs are forgotten beyond
    `keep` jobs."""

    def __init__(self, workers: int = 2, keep: int = 1000) -> None:
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="model-job")
        self._lock = threading.Lock()
        self._by_id: dict[str, _Job] = {}  # insertion order: oldest first
        self._keep = keep

    @staticmethod
    def key(kind: str, request: BaseModel, version: Hashable) -> str:
        text = f"{kind}\n{request.model_dump_json()}\n{version!r}"
        return hashlib.sha256(text.encode()).hexdigest()[:24]

    def submit(
        self, kind: str, request: BaseModel, version: Hashable, run: Callable[[], BaseModel]
    ) -> tuple[_Job, bool]:
        """Start (or find) the job; returns it and whether it was a cache hit."""
        key = self.key(kind, request, version)
        with self._lock:
            known = self._by_id.get(key)
            if known is not None and known.status != "failed":
                return known, True
            self._by_id.pop(key, None)
            job = _Job(job_id=key, kind=kind)
            self._by_id[key] = job
            self._forget_old()
        self._pool.submit(self._run, job, run)
        return job, False

    def _forget_old(self) -> None:
        """Drop the oldest finished jobs beyond `keep` (pending ones are never dropped)."""
        excess = len(self._by_id) - self._keep
        for job_id in [j for j, job in self._by_id.items() if job.status != "pending"][:excess]:
            del self._by_id[job_id]

    def _run(self, job: _Job, run: Callable[[], BaseModel]) -> None:
        try:
            result = run().model_dump(mode="json")
        except Exception as exc:  # every failure is reported on the job, with its type
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            with self._lock:
                job.status, job.error = "failed", detail
            return
        with self._lock:
            job.status, job.result = "done", result

    def status(self, job_id: str, cached: bool = False) -> JobStatus | None:
        with self._lock:
            job = self._by_id.get(job_id)
            if job is None:
                return None
            return JobStatus(
                job_id=job.job_id, kind=job.kind, status=job.status,  # type: ignore[arg-type]
                result=job.result, error=job.error, cached=cached,
            )  # fmt: skip

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
