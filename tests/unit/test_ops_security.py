"""Security on every port: the REST service and the metrics endpoint refuse a non-loopback
address without a token and answer 401 without it (real uvicorn, real HTTP server); Redis with
`requirepass` and an ACL user through the queue URL (a real redis-server); no password in
errors or logs."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.redis_server import local_redis, tls_files
from support.scrape import get
from support.sim import SIM_PIPELINE as PIPELINE

from elastream.base.auth import InsecureBindError, is_loopback
from elastream.base.secrets import redact, redact_url
from elastream.cli import main, submit_script
from elastream.model.pipeline import pipeline_from_dict
from elastream.report.endpoint import MetricsServer
from elastream.report.prom import RunMetrics
from elastream.runtime.queues import QueueError
from elastream.runtime.queues.redis_streams import RedisQueueStore
from elastream.runtime.spark.cluster import ClusterError, read_secret, write_auth_file
from elastream.runtime.spark.session import _jvm_launch
from reproductions.harness.redis_server import free_port

TOKEN = "tok-3b1f0c2e9d"
PASSWORD = "pw-5e4d3c2b1a"


def test_loopback_is_told_apart_from_everything_else():
    assert all(map(is_loopback, ("127.0.0.1", "127.3.2.1", "::1", "[::1]", "localhost")))
    assert not any(map(is_loopback, ("0.0.0.0", "::", "10.0.0.5", "example.org")))


def test_serve_refuses_a_public_address_without_a_token(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("ELASTREAM_SERVICE_TOKEN", raising=False)
    history = tmp_path / "h.sqlite"
    assert main(["serve", "--host", "0.0.0.0", "--history", str(history)]) == 2
    error = capsys.readouterr().err
    assert "refusing to listen on 0.0.0.0 without a bearer token" in error
    assert not history.exists()  # refused before opening anything


def test_serve_with_a_token_answers_401_without_it(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    port = free_port()
    cmd = [sys.executable, "-m", "elastream.cli", "--log-level", "warning", "serve",
           "--host", "0.0.0.0", "--port", str(port), "--token-file", str(token_file),
           "--history", str(tmp_path / "h.sqlite")]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}/models"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                status, _ = get(url, TOKEN, timeout=1)
                break
            except OSError:
                assert proc.poll() is None, proc.stdout.read()
                assert time.monotonic() < deadline, "serve did not come up"
                time.sleep(0.2)
        assert status == 200
        assert get(url)[0] == 401
        assert get(url, "wrong-token")[0] == 401
        assert get(f"http://127.0.0.1:{port}/openapi.json")[0] == 401
    finally:
        proc.terminate()
        output, _ = proc.communicate(timeout=30)
    assert TOKEN not in output


def test_the_metrics_endpoint_needs_a_token_off_loopback():
    metrics = RunMetrics(pipeline_from_dict(PIPELINE, "test"))
    with pytest.raises(InsecureBindError, match="refusing to listen on 0.0.0.0"):
        MetricsServer(metrics, "0.0.0.0", 0)
    with MetricsServer(metrics, "0.0.0.0", 0, token=TOKEN) as server:
        url = f"http://127.0.0.1:{server.port}"
        for path in ("/metrics", "/state", "/"):
            assert get(url + path)[0] == 401
            assert get(url + path, "nope")[0] == 401
            assert get(url + path, TOKEN)[0] == 200
        assert "elastream_operator_replicas_active" in get(url + "/metrics", TOKEN)[1]


@pytest.fixture(scope="module")
def guarded_redis(tmp_path_factory):
    server = local_redis(tmp_path_factory.mktemp("redis-auth"), password=PASSWORD)
    server.start()
    yield server
    server.stop()


def test_redis_with_the_password_in_the_url_works(guarded_redis):
    store = RedisQueueStore(guarded_redis.url + "?prefix=auth-ok")
    try:
        assert store.exists() is False  # a real request, authenticated
        assert PASSWORD in store.address  # passed on (to executors) in full
    finally:
        store.close()


@pytest.mark.parametrize("auth", ["", ":wrong@", "default:wrong@"])
def test_redis_without_the_right_password_fails_in_one_clear_line(guarded_redis, auth):
    url = f"redis://{auth}127.0.0.1:{guarded_redis.port}/0"
    with pytest.raises(QueueError) as caught:
        RedisQueueStore(url)
    message = str(caught.value)
    assert "authentication failed" in message and "\n" not in message
    assert f"127.0.0.1:{guarded_redis.port}" in message
    assert "wrong" not in message  # the given password is never shown


def test_an_acl_user_through_the_url(guarded_redis):
    import redis

    admin = redis.Redis(port=guarded_redis.port, password=PASSWORD)
    admin.acl_setuser("app", enabled=True, passwords=[f"+{PASSWORD}-app"], keys=["*"],
                      commands=["+@all"])  # fmt: skip
    admin.close()
    url = f"redis://app:{PASSWORD}-app@127.0.0.1:{guarded_redis.port}/0?prefix=acl"
    store = RedisQueueStore(url)
    try:
        assert store.exists() is False
    finally:
        store.close()
    with pytest.raises(QueueError, match="authentication failed"):
        RedisQueueStore(url.replace("-app@", "-bad@"))


def test_redaction_masks_passwords_everywhere():
    url = f"redis://app:{PASSWORD}@h:6379/0?prefix=x"
    assert redact_url(url) == "redis://app:***@h:6379/0?prefix=x"
    assert redact_url("redis://h:6379/0") == "redis://h:6379/0"
    conf = {"spark.authenticate.secret": PASSWORD, "spark.x": "1"}
    nested = {"queues": url, "list": [f"see {url} now"], "n": 3, "token": None,
              "spark": {"conf": conf}}  # fmt: skip
    masked = redact(nested)
    assert PASSWORD not in repr(masked)
    assert masked["spark"]["conf"] == {"spark.authenticate.secret": "***", "spark.x": "1"}
    assert masked["token"] is None and masked["n"] == 3
    with pytest.raises(QueueError) as caught:
        RedisQueueStore(f"redis://u:{PASSWORD}@h:6379/notanumber")
    assert PASSWORD not in str(caught.value)


def test_redis_over_tls_with_a_password(tmp_path):
    """rediss:// with the server's CA: works with the password; a client that does not trust
    the CA, or speaks plain TCP to the TLS port, fails."""
    files = tls_files(tmp_path / "tls")
    server = local_redis(tmp_path / "redis", password=PASSWORD, tls=files)
    server.start()
    try:
        assert server.url.startswith(f"rediss://:{PASSWORD}@127.0.0.1:")
        store = RedisQueueStore(server.url + "&prefix=tls")
        try:
            assert store.exists() is False  # a real request over TLS, authenticated
            assert store.address.startswith("rediss://")
        finally:
            store.close()
        untrusted = f"rediss://:{PASSWORD}@127.0.0.1:{server.port}/0"  # system CAs only
        with pytest.raises(QueueError, match="TLS failed.*(?i:certificate)") as caught:
            RedisQueueStore(untrusted)
        assert PASSWORD not in str(caught.value)
    finally:
        server.stop()


def test_the_cluster_secret_file_is_the_owners_alone_and_new_every_time(tmp_path):
    path = write_auth_file(tmp_path / "spark-auth.conf")
    first = read_secret(path)
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.read_text() == f"spark.authenticate true\nspark.authenticate.secret {first}\n"
    assert len(first) == 64 and read_secret(write_auth_file(path)) != first  # a new one
    path.write_text("spark.authenticate true\n")
    with pytest.raises(ClusterError, match=r"spark-auth.conf holds no 'spark.authenticate.secret"):
        read_secret(path)
    with pytest.raises(ClusterError, match=r"cannot read the Spark secret file .*missing.conf"):
        read_secret(tmp_path / "missing.conf")


def test_the_driver_jvm_gets_the_secret_from_a_file_and_the_ui_on_loopback(tmp_path, monkeypatch):
    """What a launching driver hands spark-submit (the JVM itself starts in the Spark tests:
    tests/spark/test_cluster.py): the file's path, never the secret; the environment is restored."""
    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS", raising=False)
    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)
    path = write_auth_file(tmp_path / "spark auth.conf")  # a space: quoted
    with _jvm_launch(path, "127.0.0.1"):
        args = os.environ["PYSPARK_SUBMIT_ARGS"]
        assert shlex.split(args) == ["--properties-file", str(path), "pyspark-shell"]
        assert read_secret(path) not in args
        assert os.environ["SPARK_LOCAL_IP"] == "127.0.0.1"
    assert "PYSPARK_SUBMIT_ARGS" not in os.environ and "SPARK_LOCAL_IP" not in os.environ


def test_the_spark_submit_entry_point_is_printed_and_shadows_nothing(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--spark-submit-script"])
    assert exit_.value.code == 0
    script = Path(capsys.readouterr().out.strip())
    assert script == submit_script() and script.name == "elastream_submit.py"
    assert [p.name for p in script.parent.iterdir() if p.suffix == ".py"] == [script.name]
    ran = subprocess.run([sys.executable, str(script), "--version"], capture_output=True, text=True)
    assert ran.returncode == 0 and ran.stdout.startswith("elastream "), ran.stderr
