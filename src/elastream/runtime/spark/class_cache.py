"""The driver JVM's class cache: a class-data-sharing archive (Java's `-XX:SharedArchiveFile`) of
the classes Spark loads, made once by the first JVM launched without one (written at its exit)
and mapped by every JVM launched after it; measured here, it halves a session's start.

One archive per Java, Spark install and driver class path, in the user's cache folder (those of
a Spark install since removed are removed at the next launch). A JVM making one writes it under
a name of its own (`*.partial`) and the next launch after that JVM has exited renames it into
place; only one JVM makes one at a time. The JVM checks an archive
before using it (`-XX:+VerifySharedSpaces`) and runs without it when it does not match (a cut-off
file, another Java): the cache changes start-up time, never what runs."""

from __future__ import annotations

import hashlib
import logging
import os
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pyspark

from elastream.runtime.spark.java import java_command

log = logging.getLogger(__name__)
MAKE = "-XX:ArchiveClassesAtExit="
USE = "-XX:SharedArchiveFile="
DYNAMIC_MAGIC = (0xF00BABA8).to_bytes(4, "little")  # the first bytes of an archive made at exit
# the JVM's own log lines (the archive's "skipping class ..." warnings among them) to its
# standard error, which the runtime sends to spark.log; cds lines off
QUIET = "-Xlog:disable -Xlog:all=warning,cds*=off:stderr"
PROC = Path("/proc")  # the running processes' command lines: who is making an archive
# settings that change the driver's class path: each gets an archive of its own
CLASS_PATH_KEYS = ("spark.jars", "spark.jars.packages", "spark.driver.extraClassPath")


def cache_root() -> Path:
    """elastream's cache: $XDG_CACHE_HOME/elastream, else ~/.cache/elastream."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "elastream"


def cache_folder() -> Path:
    """Where the archives are kept: the cache's jvm folder."""
    return cache_root() / "jvm"


def archive_name(options: Mapping[str, str]) -> str:
    """The archive's file name for the Java, the Spark install and the class path of `options`."""
    java = java_command() or "java"
    real = Path(java).resolve()
    stamp = real.stat().st_mtime_ns if real.exists() else 0
    jars = spark_jars()
    listing = sorted(p.name for p in jars.glob("*.jar")) if jars.is_dir() else []
    parts = [str(real), str(stamp), str(jars), *listing]
    parts += [f"{key}={options.get(key, '')}" for key in CLASS_PATH_KEYS]
    digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
    return f"spark-{pyspark.__version__}-{digest}.jsa"


def spark_jars() -> Path:
    """The folder of the Spark install's jars (pyspark's)."""
    return Path(pyspark.__file__).parent / "jars"


def prune(folder: Path) -> None:
    """Remove the archives of Spark installs that are gone (a deleted virtual environment):
    each archive's `.jars` file names the jars folder it was made for."""
    for owner in folder.glob("*.jsa.jars"):
        archive = folder / owner.name.removesuffix(".jars")
        if Path(owner.read_text().strip()).is_dir() or being_made(archive):
            continue  # its install is there, or its JVM still runs (pruned at a later launch)
        for path in (archive, *folder.glob(f"{archive.name}.*.partial")):
            path.unlink(missing_ok=True)
        owner.unlink()


def java_options(options: Mapping[str, str], folder: Path | None = None) -> str:
    """The JVM options that use this driver's archive (or make it, when there is none and no
    JVM is making one); "" when the user's own JVM options choose a class-data-sharing setting
    already, where processes cannot be listed (no /proc) or the cache folder cannot be written
    (logged)."""
    given = options.get("spark.driver.extraJavaOptions", "")
    if "SharedArchiveFile" in given or "ArchiveClassesAtExit" in given or "-Xshare" in given:
        return ""
    if not PROC.joinpath("self", "cmdline").exists():
        return ""
    folder = folder or cache_folder()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        log.warning("no JVM class cache (%s: %s): Spark starts without one", folder, exc)
        return ""
    prune(folder)
    archive = folder / archive_name(options)
    settle(archive)
    if archive.exists():
        return f"{USE}{archive} -XX:+VerifySharedSpaces {QUIET}"
    if being_made(archive):
        return ""
    archive.with_name(f"{archive.name}.jars").write_text(str(spark_jars()))
    return f"{MAKE}{archive}.{os.getpid()}.partial {QUIET}"


def with_class_cache(options: Mapping[str, str], folder: Path | None = None) -> dict[str, str]:
    """`options` with the class cache's JVM options after the user's own driver options."""
    extra = java_options(options, folder)
    merged = dict(options)
    if extra:
        given = merged.get("spark.driver.extraJavaOptions", "")
        merged["spark.driver.extraJavaOptions"] = f"{given} {extra}".strip()
    return merged


def settle(archive: Path) -> None:
    """Rename the first finished partial archive into place (its JVM has exited) if a JVM can
    map it; remove the other finished ones."""
    writing = being_made(archive)
    for partial in sorted(archive.parent.glob(f"{archive.name}.*.partial")):
        if partial in writing:
            continue
        if archive.exists() or not mappable(partial):
            partial.unlink(missing_ok=True)
        else:
            partial.replace(archive)


def mappable(partial: Path) -> bool:
    """A JVM maps `partial` without failing: one cut off (its JVM killed while writing it)
    makes the JVM abort instead of running without it, so it must not be used."""
    with partial.open("rb") as fh:
        if fh.read(4) != DYNAMIC_MAGIC:  # never written (its JVM killed before its exit)
            log.info("a JVM class cache never written (%s) removed", partial.name)
            return False
    java = java_command() or "java"
    # a JVM that aborts writes no crash report (hs_err_pid*.log) into the working directory
    quiet_crash = ["-XX:ErrorFile=/dev/null", "-XX:-CreateCoredumpOnCrash"]
    done = subprocess.run(
        [java, *quiet_crash, f"{USE}{partial}", "-XX:+VerifySharedSpaces", "-version"],
        capture_output=True,
        timeout=60,
        cwd=partial.parent,
    )
    if done.returncode != 0:
        log.info("a JVM class cache left unfinished (%s) removed", partial.name)
    return done.returncode == 0


def being_made(archive: Path) -> set[Path]:
    """The partial archives of `archive` that running processes were launched to write (at
    their exit: the file appears only then), read from their command lines in /proc."""
    pattern = re.compile(re.escape(f"{MAKE}{archive}.").encode() + rb"\d+\.partial")
    found: set[Path] = set()
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:  # the process ended while we looked: it writes nothing
            continue
        found.update(Path(m.group()[len(MAKE) :].decode()) for m in pattern.finditer(cmdline))
    return found
