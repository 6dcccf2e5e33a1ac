"""Java for Spark, checked before Spark starts: present (as Spark's launcher finds it, from
JAVA_HOME or the PATH) and version 17 or newer; one line saying what to do if not."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

MIN_JAVA = 17
INSTALL = "install Java 17 or newer (e.g. openjdk-17-jre-headless) or set JAVA_HOME to one"


class JavaError(RuntimeError):
    """No usable Java for Spark; the message says what was found and what to do."""


def java_command() -> str | None:
    """The `java` Spark's launcher runs: $JAVA_HOME/bin/java, else the one on the PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        return str(Path(home) / "bin" / "java")
    return shutil.which("java")


def java_major(version_text: str) -> int | None:
    """The major version in `java -version`'s output: "17.0.9" -> 17, "1.8.0_392" -> 8."""
    found = re.search(r'version "(\d+)(?:\.(\d+))?', version_text)
    if found is None:
        return None
    major = int(found.group(1))
    return int(found.group(2) or 0) if major == 1 else major


def check_java() -> str:
    """Raise JavaError unless Spark's launcher will find Java MIN_JAVA or newer; which it is."""
    java = java_command()
    where = "$JAVA_HOME/bin/java" if os.environ.get("JAVA_HOME") else "java on the PATH"
    if java is None:
        raise JavaError(f"Spark needs Java, and there is no {where}: {INSTALL}")
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except OSError as exc:
        raise JavaError(f"cannot run {java} ({exc.strerror or exc}): {INSTALL}") from None
    major = java_major(done.stderr + done.stdout)
    if major is None:
        raise JavaError(f"{java} -version did not tell its version: {INSTALL}")
    if major < MIN_JAVA:
        raise JavaError(f"Spark needs Java {MIN_JAVA} or newer; {java} is Java {major}: {INSTALL}")
    return f"Java {major} ({java})"
