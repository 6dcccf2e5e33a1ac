"""Where things are: the repository, the tests' pipelines, the shared real data sets."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PIPELINES = ROOT / "tests" / "pipelines"
SHARED_DATA = ROOT.parent / "shared" / "data"
