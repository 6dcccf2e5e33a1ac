"""The command line a new user meets first: `--help` of the program and of every command,
`--version`, and commands imported only when they run."""

import argparse
import json
import pkgutil
import subprocess
import sys

import pytest

import elastream.cli as cli
from elastream.cli import build_parser, main


def command_lines(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()):
    """`words` for the program and for every command and sub-command under it."""
    yield words
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from command_lines(child, (*words, name))


EVERY_COMMAND = list(command_lines(build_parser()))


def test_every_module_of_the_cli_is_a_listed_command():
    from elastream.cli import COMMANDS

    modules = {m.name for m in pkgutil.iter_modules(cli.__path__) if not m.name.startswith("_")}
    assert modules == set(COMMANDS)
    assert len(EVERY_COMMAND) > len(COMMANDS)  # the program, each command, cluster's actions


@pytest.mark.parametrize("words", EVERY_COMMAND, ids=lambda w: " ".join(w) or "elastream")
def test_help_exits_0_and_shows_the_usage(words, capsys):
    with pytest.raises(SystemExit) as done:
        main([*words, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: {' '.join(('elastream', *words))}"), out[:200]
    if not words:  # the program's help lists every command with its one-line help
        for (name,) in (w for w in EVERY_COMMAND if len(w) == 1):
            assert f"    {name} " in out, name


def imported_by(argv: list[str]) -> list[str]:
    """The elastream.cli modules, pydantic, pyspark and pandas imported by `main(argv)` in a
    fresh interpreter."""
    code = (
        "import json, sys\n"
        "from elastream.cli import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "names = [m for m in sys.modules if m.startswith(('elastream.cli.', 'pydantic', "
        "'pyspark', 'pandas'))]\n"
        "print(json.dumps(sorted(names)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(done.stdout.splitlines()[-1])


def test_version_imports_no_command_and_no_heavy_library():
    assert imported_by(["--version"]) == ["elastream.cli._logging"]


def test_a_command_imports_its_own_module_only():
    loaded = {m for m in imported_by(["trace", "--help"]) if m.startswith("elastream.cli.")}
    assert "elastream.cli.trace" in loaded
    others = {f"elastream.cli.{w[0]}" for w in EVERY_COMMAND if len(w) == 1 and w != ("trace",)}
    assert loaded.isdisjoint(others)


def test_run_help_imports_no_pandas():
    # pandas is imported where a trace file is read or a statsmodels forecast fits: importing it
    # on every command's path cost 0.4-0.6 s of `elastream run`'s start (results.md, 30 Nov)
    assert not any(m.startswith("pandas") for m in imported_by(["run", "--help"]))
