"""Fenced blocks of the docs: found, marked, and executed as modules of their own."""

from __future__ import annotations

import ast
import re
import sys
import types
from pathlib import Path

FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def blocks(doc: Path, lang: str) -> list[tuple[int, str]]:
    """(line number, text) of every fenced block of language `lang` in `doc`."""
    text = doc.read_text()
    return [
        (text.count("\n", 0, m.start()) + 1, m.group(2))
        for m in FENCE.finditer(text)
        if m.group(1) == lang
    ]


def marker(text: str, name: str) -> str | None:
    """The value of a `# name: value` first line, or None."""
    first = text.split("\n", 1)[0]
    prefix = f"# {name}:"
    return first[len(prefix) :].strip() if first.startswith(prefix) else None


def run_block(doc: Path, line: int, text: str, monkeypatch) -> None:
    """Execute a doc's Python block as module `docs_example_<line>` (registered, so that its
    functions can be imported by path); a `# starts Spark` block: only its imports."""
    where = f"docs/{doc.name}:{line}"
    tree = ast.parse(text, where)
    compile(tree, where, "exec")
    if text.startswith("# starts Spark"):
        imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
        assert imports, f"{where}: a Spark example with nothing to import-check"
        tree = ast.Module(body=imports, type_ignores=[])
    module = types.ModuleType(f"docs_example_{doc.stem.replace('-', '_')}_{line}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(tree, where, "exec"), module.__dict__)
