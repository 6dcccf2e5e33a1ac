"""Spark's and the JVM's log lines go to spark.log in the run directory, not to the console: a
log4j2 configuration written there and handed to the driver JVM at its start."""

from __future__ import annotations

from pathlib import Path
from typing import Any

LOG_FILE = "spark.log"
CONFIG_FILE = "log4j2.properties"
JAVA_OPTIONS = "spark.driver.extraJavaOptions"
# credentials in a URL (the Redis queue address travels as a source option): masked in the
# plans and strings Spark logs or shows
URL_CREDENTIALS = "://[^/@\\s]*@"


LOG_ROLL_SIZE = "64MB"  # spark.log rolls over at this size...
LOG_ROLLS_KEPT = 3  # ...into spark.log.1 .. .3: a run of days keeps at most 4 x 64 MB of logs


def log4j2_properties(log_path: Path) -> str:
    """Everything at INFO and above to `log_path`, rolled over by size so that a run lasting
    days keeps a bounded log; nothing to the console."""
    return "\n".join(
        [
            "status = error",
            "appender.file.type = RollingFile",
            "appender.file.name = file",
            f"appender.file.fileName = {log_path}",
            f"appender.file.filePattern = {log_path}.%i",
            "appender.file.policies.type = Policies",
            "appender.file.policies.size.type = SizeBasedTriggeringPolicy",
            f"appender.file.policies.size.size = {LOG_ROLL_SIZE}",
            "appender.file.strategy.type = DefaultRolloverStrategy",
            f"appender.file.strategy.max = {LOG_ROLLS_KEPT}",
            "appender.file.layout.type = PatternLayout",
            "appender.file.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n%ex",
            "rootLogger.level = info",
            "rootLogger.appenderRef.file.ref = file",
            # the noisiest loggers at WARN even in the file
            "logger.jetty.name = org.sparkproject.jetty",
            "logger.jetty.level = warn",
            "logger.parquet.name = org.apache.parquet",
            "logger.parquet.level = warn",
            "",
        ]
    )


def jvm_log_conf(out_dir: Path, conf: dict[str, str]) -> dict[str, str]:
    """`conf` with the driver JVM logging to `out_dir`/spark.log (the config file written there)
    and URL credentials masked in the strings Spark writes (unless `conf` sets its own regex).
    Java options already given are kept, after ours (so a user's log4j2 setting wins); a session
    that already runs keeps its logging (the JVM reads this only at start)."""
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    config = out_dir / CONFIG_FILE
    config.write_text(log4j2_properties(out_dir / LOG_FILE))
    ours = f"-Dlog4j2.configurationFile={config.as_uri()}"
    given = conf.get(JAVA_OPTIONS, "")
    return {
        "spark.redaction.string.regex": URL_CREDENTIALS,
        **conf,
        JAVA_OPTIONS: f"{ours} {given}".strip(),
    }


def redirect_jvm_logs(spark: Any, out_dir: Path) -> None:
    """A driver JVM that started with Spark's own logging (spark-submit's) logs to
    `out_dir`/spark.log from now on: log4j2 reconfigured with the file `jvm_log_conf` wrote."""
    config = (Path(out_dir) / CONFIG_FILE).resolve()
    jvm = spark.sparkContext._jvm
    jvm.org.apache.logging.log4j.core.config.Configurator.reconfigure(
        jvm.java.net.URI(config.as_uri())
    )
    spark.sparkContext.setLogLevel("ERROR")  # the reconfiguration reset the root level


def send_jvm_stderr(spark: Any, out_dir: Path) -> None:
    """Point the driver JVM's System.err at `out_dir`/spark.log (appending): what the JVM prints
    there outside log4j — the stack of an exception no thread caught, such as the
    ClosedChannelException Spark's stream threads may throw at a stop — stays off the console."""
    jvm = spark.sparkContext._jvm
    path = str((Path(out_dir) / LOG_FILE).resolve())
    stream = jvm.java.io.PrintStream(jvm.java.io.FileOutputStream(path, True), True)
    jvm.java.lang.System.setErr(stream)
