"""Spark's log configuration: log4j2 properties written in the run directory, handed to the
driver JVM, a user's Java options kept after ours; URL credentials masked by Spark."""

from __future__ import annotations

import re

from elastream.runtime.spark.logs import JAVA_OPTIONS, URL_CREDENTIALS, jvm_log_conf


def test_the_driver_logs_to_a_file_in_the_run_directory(tmp_path):
    conf = jvm_log_conf(tmp_path / "run", {JAVA_OPTIONS: "-Dmine=1", "spark.x": "y"})
    properties = tmp_path / "run" / "log4j2.properties"
    assert conf[JAVA_OPTIONS] == f"-Dlog4j2.configurationFile={properties.as_uri()} -Dmine=1"
    assert conf["spark.x"] == "y"
    text = properties.read_text()
    assert f"appender.file.fileName = {tmp_path / 'run' / 'spark.log'}" in text
    assert "rootLogger.appenderRef.file.ref = file" in text
    assert "console" not in text.lower()  # nothing to the console
    # bounded over days: rolled over by size, a fixed number of old files kept
    assert "appender.file.type = RollingFile" in text
    assert f"appender.file.filePattern = {tmp_path / 'run' / 'spark.log'}.%i" in text
    assert "appender.file.policies.size.size = 64MB" in text
    assert "appender.file.strategy.max = 3" in text


def test_spark_masks_url_credentials_unless_told_otherwise(tmp_path):
    conf = jvm_log_conf(tmp_path, {})
    masked = re.sub(conf["spark.redaction.string.regex"], "***", "redis://u:p@h:6379/0")
    assert masked == "redis***h:6379/0"
    assert re.sub(URL_CREDENTIALS, "", "redis://h:6379/0") == "redis://h:6379/0"
    own = jvm_log_conf(tmp_path, {"spark.redaction.string.regex": "x"})
    assert own["spark.redaction.string.regex"] == "x"
