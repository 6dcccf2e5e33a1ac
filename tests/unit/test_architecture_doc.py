"""docs/architecture.md's import graph is the code's: scripts/import_graph.py --check passes on the
tree, and fails on a page whose block was edited by hand."""

from __future__ import annotations

import subprocess
import sys

from support.paths import ROOT

SCRIPT = ROOT / "scripts" / "import_graph.py"


def test_the_pages_import_graph_is_the_codes():
    done = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_hand_edited_graph_fails_the_check(tmp_path, monkeypatch):
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import import_graph
    finally:
        sys.path.remove(str(SCRIPT.parent))
    page = tmp_path / "architecture.md"
    text = (ROOT / "docs" / "architecture.md").read_text()
    page.write_text(
        text.replace("import cycles between modules: 0", "import cycles between modules: 1")
    )
    monkeypatch.setattr(import_graph, "DOC", page)
    monkeypatch.setattr(sys, "argv", ["import_graph.py", "--check"])
    try:
        import_graph.main()
    except SystemExit as stop:
        assert "not the code's" in str(stop.code)
    else:
        raise AssertionError("the check passed on an edited page")
