"""Secrets kept out of what a run writes: passwords in URLs masked before logging or saving."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

MASK = "***"
_URL = re.compile(r"[a-z][a-z0-9+.-]*://[^\s'\"]+", re.IGNORECASE)
# keys whose values are secrets wherever they appear (as Spark's spark.redaction.regex)
SECRET_KEY = re.compile(r"secret|password|passwd|token|credential|access[._-]?key", re.IGNORECASE)


def redact_url(url: str) -> str:
    """`url` with its password (if any) replaced by ***; the user name stays."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # not a URL after all (e.g. a bad port): leave the text as it is
        return url
    if password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rsplit("@", 1)[1]
    return parts._replace(netloc=f"{user}:{MASK}@{host}").geturl()


def redact_text(text: str) -> str:
    """Every URL in `text` with its password masked."""
    return _URL.sub(lambda m: redact_url(m.group(0)), text)


def redact(value: Any) -> Any:
    """A JSON-like value (dicts, lists, strings) with every URL password masked, and the value
    of every key that names a secret (e.g. spark.authenticate.secret, token)."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {
            k: MASK if SECRET_KEY.search(str(k)) and value_set(v) else redact(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return type(value)(redact(v) for v in value)
    return value


def value_set(value: Any) -> bool:
    """Whether a secret-named key holds something to hide (None and '' are shown as they are)."""
    return value not in (None, "")
