"""Make the driver JVM's class cache before the Spark tests (runtime/spark/class_cache.py), so
that every test's JVM maps it: the README's first pipeline runs for a few seconds from a
temporary folder, and its JVM writes the archive at its exit; this waits until it is in place.
Nothing to do when the archive is there already.
    .venv/bin/python scripts/make_class_cache.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.first_pipeline import setup  # noqa: E402

from elastream.runtime.spark.class_cache import archive_name, being_made, cache_folder, settle  # noqa: E402


def main() -> int:
    archive = cache_folder() / archive_name({})
    settle(archive)
    if archive.exists():
        print(f"class cache: {archive} (there already)")
        return 0
    start = time.time()
    with tempfile.TemporaryDirectory() as folder:
        setup(Path(folder))
        cmd = [sys.executable, "-m", "elastream.cli", "run", "pipeline.yaml", "--out", "runs/cache"]
        cmd += ["--duration", "8", "--quiet", "--no-metrics"]
        done = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            print(done.stdout[-2000:], done.stderr[-2000:], file=sys.stderr)
            return 1
        deadline = time.time() + 300
        while being_made(archive) and time.time() < deadline:  # the JVM writes it at its exit
            time.sleep(1)
    settle(archive)
    if not archive.exists():
        print(
            f"class cache: no archive at {archive} after {time.time() - start:.0f} s",
            file=sys.stderr,
        )
        return 1
    print(f"class cache: {archive} made in {time.time() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
