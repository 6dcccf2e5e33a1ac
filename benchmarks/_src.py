"""The tree's src/ on the import path, for the benchmarks that use the papers' reproductions:
they live in src/reproductions and are not installed with elastream (its wheel holds elastream
only). Imported before them: `import _src  # noqa: F401`."""

import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")
if SRC not in sys.path:
    sys.path.insert(0, SRC)
