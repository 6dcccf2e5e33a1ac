"""A policy added by one file and its package's entry point is a policy like the built-in ones:
listed by `elastream config --policies`, run by `elastream run` on the simulator (on Spark:
tests/spark/test_spark_plugin.py), refused with its source named when it cannot be loaded."""

import subprocess
import sys

import pytest
from support.plugins import BROKEN, CAUTIOUS, assert_cautious, cautious_run, with_plugin

from elastream.base.registry import PluginError, Registry, UnknownNameError


def test_the_installed_plugin_is_listed_with_the_built_in_policies():
    cmd = [sys.executable, "-m", "elastream.cli", "config", "--policies"]
    listed = subprocess.run(cmd, env=with_plugin(CAUTIOUS), capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    assert "cautious: pool minimum + extra (a test plugin)" in listed.stdout.splitlines()
    assert "psps: queue-aware prediction, PSPS Eq. 1-4" in listed.stdout.splitlines()
    without = subprocess.run(cmd, capture_output=True, text=True)
    assert "cautious" not in without.stdout


def test_the_plugin_runs_on_the_simulator_with_its_options(tmp_path):
    out = tmp_path / "sim"
    cmd = cautious_run(out, "sim", "constant:rate=20,duration=20")
    done = subprocess.run(cmd, env=with_plugin(CAUTIOUS), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert_cautious(out)


def test_an_unknown_policy_lists_the_plugins_among_the_known(tmp_path):
    cmd = cautious_run(tmp_path / "x", "sim", "constant:rate=20,duration=4")
    cmd[cmd.index("--config") + 1] = str(tmp_path / "nope.yaml")
    (tmp_path / "nope.yaml").write_text("policy: careful\n")
    done = subprocess.run(cmd, env=with_plugin(CAUTIOUS), capture_output=True, text=True)
    assert done.returncode != 0
    assert "unknown policy 'careful'" in done.stderr and "cautious" in done.stderr


def test_a_plugin_that_cannot_load_is_named_with_its_distribution(monkeypatch):
    monkeypatch.syspath_prepend(str(BROKEN))
    registry: Registry[object] = Registry("policy", group="elastream.test_broken")
    with pytest.raises(PluginError) as error:
        registry.names()
    message = str(error.value)
    assert "policy plugin 'broken' (no_such_module_here:POLICY, from broken-policy)" in message
    assert "ModuleNotFoundError" in message


def test_a_plugin_registers_under_its_entry_point_name(monkeypatch):
    monkeypatch.syspath_prepend(str(CAUTIOUS))
    registry: Registry[object] = Registry("policy", group="elastream.policies")
    assert registry.names() == ["cautious"]
    assert registry.get("cautious").summary == "pool minimum + extra (a test plugin)"
    with pytest.raises(UnknownNameError, match="known: cautious"):
        registry.get("careful")


def test_a_plugin_named_like_a_registered_policy_is_refused(monkeypatch):
    monkeypatch.syspath_prepend(str(CAUTIOUS))
    registry: Registry[object] = Registry("policy", group="elastream.policies")
    registry.register("cautious", object())  # a built-in of that name
    with pytest.raises(PluginError, match="a policy 'cautious' is already registered"):
        registry.get("cautious")
