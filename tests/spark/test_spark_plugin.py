"""The plugin policy of tests/plugins runs on Spark as it does on the simulator
(tests/unit/test_policy_plugins.py): installed by its entry point, nothing else edited."""

import subprocess

import pytest
from support.plugins import CAUTIOUS, assert_cautious, cautious_run, with_plugin

pytestmark = pytest.mark.spark


def test_the_plugin_policy_decides_a_spark_run(tmp_path):
    out = tmp_path / "spark"
    cmd = cautious_run(out, "spark", "constant:rate=20,duration=12")
    done = subprocess.run(cmd, env=with_plugin(CAUTIOUS), capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert_cautious(out)
