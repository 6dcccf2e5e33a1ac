"""Parse operator: decode and check raw JSON tweets; malformed ones go to stream 'rejected'."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from elastream.model.events import Emit, Event

TWITTER_DATE = "%a %b %d %H:%M:%S %z %Y"  # created_at in Twitter v1.1 (the generator writes it)
REJECTED = "rejected"  # parse's output stream for malformed tweets (a dead-letter queue)


class MalformedTweet(ValueError):
    """A tweet the pipeline cannot use; the message says what is wrong and where."""


_MISSING = object()


def _field(obj: dict[str, Any], path: str, kind: type, default: Any = _MISSING) -> Any:
    """The value at dotted `path`, checked to be of `kind` (a bool is not an int here)."""
    value: Any = obj
    for part in path.split("."):
        value = value.get(part, _MISSING) if isinstance(value, dict) else _MISSING
    if value is _MISSING:
        if default is _MISSING:
            raise MalformedTweet(f"missing field {path}")
        return default
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise MalformedTweet(
            f"field {path}: expected {kind.__name__}, got {type(value).__name__} {value!r:.40}"
        )
    return value


def _date(obj: dict[str, Any], path: str) -> str:
    text = _field(obj, path, str)
    try:
        return datetime.strptime(text, TWITTER_DATE).isoformat()
    except ValueError:
        raise MalformedTweet(
            f"field {path}: {text!r:.40} is not a Twitter date "
            "like 'Sun Mar 15 12:00:00 +0000 2020'"
        ) from None


def _entity_texts(tweet: dict[str, Any], kind: str, key: str) -> list[str]:
    items = _field(tweet, f"entities.{kind}", list, default=[])
    out = []
    for i, item in enumerate(items):
        value = item.get(key) if isinstance(item, dict) else None
        if not isinstance(value, str):
            raise MalformedTweet(f"field entities.{kind}[{i}].{key}: expected a string")
        out.append(value)
    return out


def _decode(raw: Any) -> dict[str, Any]:
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", errors="replace")
    if not isinstance(raw, str):
        raise MalformedTweet(f"payload is a {type(raw).__name__}, expected a JSON string")
    try:
        tweet = json.loads(raw)
    except json.JSONDecodeError as exc:
        at = " " if exc.msg.endswith(" at") else " at "  # "Unterminated string starting at"
        raise MalformedTweet(
            f"invalid JSON: {exc.msg}{at}line {exc.lineno} column {exc.colno} "
            f"(char {exc.pos} of {len(raw)})"
        ) from None
    if not isinstance(tweet, dict):
        raise MalformedTweet(f"expected a JSON object at the top level, got {type(tweet).__name__}")
    return tweet


def parse_tweet(raw: Any) -> dict[str, Any]:
    """The fields the next operators need, from one raw tweet; raises MalformedTweet."""
    tweet = _decode(raw)
    tweet_id = _field(tweet, "id_str", str, default=None)
    if tweet_id is None:
        tweet_id = str(_field(tweet, "id", int, default=None) or "")
        if not tweet_id:
            raise MalformedTweet("missing field id_str (and no numeric id)")
    created_at = _date(tweet, "created_at")
    text = _field(tweet, "text", str)
    _field(tweet, "user", dict)
    counts = {
        k: _field(tweet, f"user.{k}_count", int) for k in ("followers", "friends", "statuses")
    }
    for k, v in counts.items():
        if v < 0:
            raise MalformedTweet(f"field user.{k}_count: negative ({v})")
    return {
        "tweet_id": tweet_id,
        "created_at": created_at,
        "author": _field(tweet, "user.screen_name", str),
        "followers": counts["followers"],
        "friends": counts["friends"],
        "statuses": counts["statuses"],
        "verified": _field(tweet, "user.verified", bool),
        "account_created_at": _date(tweet, "user.created_at"),
        "lang": _field(tweet, "lang", str, default="und"),
        "text": text,
        "hashtags": _entity_texts(tweet, "hashtags", "text"),
        "mentions": _entity_texts(tweet, "user_mentions", "screen_name"),
        "urls": _entity_texts(tweet, "urls", "expanded_url"),
    }


def parse(events: list[Event]) -> Iterable[Emit]:
    """Operator: decode each raw tweet; malformed ones go to stream 'rejected' with the reason."""
    out = []
    for e in events:
        try:
            out.append(e.emit(parse_tweet(e.payload)))
        except MalformedTweet as exc:
            out.append(e.emit({"raw": e.payload, "error": str(exc)}, stream=REJECTED))
    return out
