"""Logging for the command line: `--log-level`, `--log-format text|json`, to stderr, with every
URL password masked in every line."""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import TextIO

from elastream.base.secrets import redact_text

LEVELS = ("debug", "info", "warning", "error")
FORMATS = ("text", "json")
HANDLER_NAME = "elastream-cli"
QUIET_LIBRARIES = ("py4j", "uvicorn.access", "matplotlib", "urllib3", "httpx")


class CurrentStderrHandler(logging.StreamHandler):
    """Writes to whatever sys.stderr is when a line is logged: rich's live table replaces it
    while it runs, so log lines print above the table instead of through it."""

    @property  # type: ignore[override]
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        pass  # always the current sys.stderr


class TextFormatter(logging.Formatter):
    """`HH:MM:SS LEVEL logger: message`, secrets masked."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S")

    def format(self, record: logging.LogRecord) -> str:
        return redact_text(super().format(record))


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts (UTC, ISO 8601), level, logger, message (and exc)."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": redact_text(record.getMessage()),
        }
        if record.exc_info:
            entry["exc"] = redact_text(self.formatException(record.exc_info))
        return json.dumps(entry)


def configure_logging(level: str = "info", fmt: str = "text", stream: TextIO | None = None) -> None:
    """Root logger to `stream` (stderr) at `level`, in `fmt`; noisy libraries at WARNING."""
    if level not in LEVELS:
        raise ValueError(f"--log-level {level!r}: expected one of {', '.join(LEVELS)}")
    if fmt not in FORMATS:
        raise ValueError(f"--log-format {fmt!r}: expected one of {', '.join(FORMATS)}")
    handler = logging.StreamHandler(stream) if stream is not None else CurrentStderrHandler()
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    handler.set_name(HANDLER_NAME)
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == HANDLER_NAME]:
        root.removeHandler(old)  # ours from an earlier call; others' (e.g. pytest's) stay
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in QUIET_LIBRARIES:
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))
