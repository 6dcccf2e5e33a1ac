"""Every environment variable the code reads is documented in docs/operations.md."""

from __future__ import annotations

import re

from support.paths import ROOT

# os.environ.get("X"), os.environ["X"], "X" in os.environ, getenv("X"), NAME_ENV = "X",
# and environ.get(k) for k in ("X", "Y")
READS = re.compile(
    r"""environ(?:\.get|\.setdefault)?\(\s*"([A-Z_]+)"|environ\[\s*"([A-Z_]+)"\]"""
    r"""|"([A-Z_]+)"\s+in\s+os\.environ|getenv\(\s*"([A-Z_]+)"|_ENV\s*=\s*"([A-Z_]+)\""""
    r"""|environ\.get\(k\) for k in \(("[A-Z_]+"(?:,\s*"[A-Z_]+")*)\)"""
)


def read_variables() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "src" / "elastream").rglob("*.py"):
        for match in READS.finditer(path.read_text()):
            for group in match.groups():
                if group:
                    names |= set(re.findall(r"[A-Z][A-Z_]+", group))
    return names


def test_every_environment_variable_read_is_documented():
    names = read_variables()
    assert {"ELASTREAM_DEBUG", "ELASTREAM_METRICS_TOKEN", "SPARK_LOCAL_IP"} <= names  # found
    section = (ROOT / "docs" / "operations.md").read_text().split("## Environment variables")[1]
    table = section.split("\n## ")[0]
    missing = sorted(n for n in names if f"`{n}`" not in table)
    assert missing == []
