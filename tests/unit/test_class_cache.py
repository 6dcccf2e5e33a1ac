"""The driver JVM's class cache with a real `java`: a partial archive is put in place only when
its writer has exited and a JVM maps it; a cut-off one is removed; a launch makes an archive
only when none exists and no JVM is making one, and leaves the user's own sharing settings."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from elastream.runtime.spark import class_cache
from elastream.runtime.spark.java import java_command

JAVA = java_command()
pytestmark = pytest.mark.skipif(JAVA is None, reason="needs java (CI installs it)")


def make_archive(path: Path) -> None:
    """A small real archive: the classes `java -version` loads."""
    done = subprocess.run([JAVA, f"-XX:ArchiveClassesAtExit={path}", "-version"],
                          capture_output=True)  # fmt: skip
    assert done.returncode == 0 and path.stat().st_size > 0, done.stderr


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    return tmp_path / class_cache.archive_name({})


def test_a_finished_partial_goes_in_place_and_a_second_one_is_removed(archive):
    first, second = (archive.with_name(f"{archive.name}.{n}.partial") for n in (11, 12))
    make_archive(first)
    make_archive(second)
    class_cache.settle(archive)
    assert archive.exists() and not first.exists() and not second.exists()
    used = class_cache.java_options({}, archive.parent)
    assert used.startswith(f"-XX:SharedArchiveFile={archive} ")


def test_a_cut_off_partial_is_removed_not_used(archive):
    whole = archive.with_name("whole.jsa")
    make_archive(whole)
    cut = archive.with_name(f"{archive.name}.7.partial")
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    class_cache.settle(archive)
    assert not archive.exists() and not cut.exists()
    assert not list(Path.cwd().glob("hs_err_pid*.log")) and not list(archive.parent.glob("hs_*"))


def test_while_a_jvm_runs_to_make_the_archive_no_second_one_makes_it(archive):
    partial = archive.with_name(f"{archive.name}.5.partial")  # written at its exit
    writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)",
                               f"-XX:ArchiveClassesAtExit={partial}"])  # fmt: skip
    try:
        cmdline = Path(f"/proc/{writer.pid}/cmdline")
        while b"ArchiveClassesAtExit" not in cmdline.read_bytes():  # until it has exec'd
            time.sleep(0.01)
        assert class_cache.java_options({}, archive.parent) == ""
        partial.write_bytes(b"")  # its exit under way: the file is there, not finished
        class_cache.settle(archive)
        assert partial.exists() and not archive.exists()
    finally:
        writer.kill()
        writer.wait()
    class_cache.settle(archive)  # the writer gone: the empty file is no archive
    assert not partial.exists() and not archive.exists()
    assert class_cache.java_options({}, archive.parent).startswith("-XX:ArchiveClassesAtExit=")


def test_a_launch_without_an_archive_makes_one_after_the_users_own_options(archive):
    merged = class_cache.with_class_cache({"spark.driver.extraJavaOptions": "-Dmine=1"},
                                          archive.parent)  # fmt: skip
    mine, make = merged["spark.driver.extraJavaOptions"].split(" ", 1)
    assert mine == "-Dmine=1"
    assert make.startswith(f"-XX:ArchiveClassesAtExit={archive}.") and ".partial " in make


@pytest.mark.parametrize("given", ["-Xshare:off", "-XX:SharedArchiveFile=/x.jsa"])
def test_the_users_own_sharing_setting_is_left_alone(archive, given):
    options = {"spark.driver.extraJavaOptions": given}
    assert class_cache.with_class_cache(options, archive.parent) == options


def test_a_class_path_of_its_own_gets_an_archive_of_its_own():
    jars = class_cache.archive_name({"spark.jars.packages": "org.example:thing:1.0"})
    assert jars != class_cache.archive_name({})


def test_the_archive_of_a_spark_install_since_removed_is_removed(tmp_path, monkeypatch):
    gone = tmp_path / "venv" / "pyspark" / "jars"
    gone.mkdir(parents=True)
    monkeypatch.setattr(class_cache, "spark_jars", lambda: gone)
    cache = tmp_path / "cache"
    assert class_cache.java_options({}, cache).startswith("-XX:ArchiveClassesAtExit=")
    [owner] = cache.glob("*.jsa.jars")
    archive = cache / owner.name.removesuffix(".jars")
    make_archive(archive)  # as if its JVM had written and settled it
    monkeypatch.undo()  # the run's own install from here on
    class_cache.prune(cache)
    assert archive.exists() and owner.exists()  # its install is still there
    gone.rmdir()
    class_cache.prune(cache)
    assert not archive.exists() and not owner.exists()
