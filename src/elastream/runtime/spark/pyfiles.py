"""The user's Python code shipped to Spark's Python workers as `--py-files` does: the modules and
packages of the pipeline's folders in one zip archive, named by its content."""

from __future__ import annotations

import hashlib
import io
import os
import tempfile
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path

FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # every entry's time: the same code makes the same bytes


def archive_dir() -> Path:
    """Where the archives are written: one folder of this user's in the temporary folder."""
    folder = Path(tempfile.gettempdir()) / f"elastream-pyfiles-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def modules_in(folder: Path) -> Iterator[tuple[str, list[Path]]]:
    """The top-level modules of `folder` (its `*.py` files) and its packages (sub-folders with an
    `__init__.py`, their `*.py` files), by top-level name; hidden and cache folders left out."""
    for path in sorted(folder.iterdir()):
        if path.name.startswith("."):
            continue
        if path.suffix == ".py" and path.is_file():
            yield path.stem, [path]
        elif path.is_dir() and (path / "__init__.py").is_file():
            files = [
                file
                for file in sorted(path.rglob("*.py"))
                if not any(
                    part.startswith(".") or part == "__pycache__"
                    for part in file.relative_to(path).parts
                )
            ]
            yield path.name, files


def app_archive(folders: Sequence[Path], where: Path | None = None) -> Path | None:
    """One zip of the modules and packages of `folders` (a name in several: the first folder's,
    as the import path finds it), written once per content under `where` (default
    `archive_dir()`), so the same code is the same file; None when the folders hold none."""
    chosen: dict[str, tuple[Path, list[Path]]] = {}
    for folder in folders:
        for name, files in modules_in(folder):
            chosen.setdefault(name, (folder, files))
    if not chosen:
        return None
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for folder, files in chosen.values():
            for file in files:
                entry = zipfile.ZipInfo(file.relative_to(folder).as_posix(), FIXED_TIME)
                archive.writestr(entry, file.read_bytes(), zipfile.ZIP_DEFLATED)
    data = buffer.getvalue()
    path = (where or archive_dir()) / f"app-{hashlib.sha256(data).hexdigest()[:16]}.zip"
    if not path.exists():
        partial = path.with_name(f".{path.name}.{os.getpid()}")
        partial.write_bytes(data)
        partial.replace(path)  # whole or absent, for a run started beside this one
    return path
