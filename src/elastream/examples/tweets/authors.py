"""Author classifier: rules for bot / organization / influencer / regular, and classify_author."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime

from elastream.examples.tweets import data
from elastream.examples.tweets.payload import required_payload
from elastream.model.events import Emit, Event

BOT_TWEETS_PER_DAY = 72.0  # one tweet every 20 minutes, around the clock, for the account's life
INFLUENCER_FOLLOWERS = 100_000
VERIFIED_INFLUENCER_FOLLOWERS = 10_000
_BOT_NAME = re.compile(r"bot(?:\d|_|$)|_bot|\d{5,}$")
_ORG_WORDS = frozenset(w.lower() for w in data.ORG_WORDS)
_ORG_SUFFIXES = tuple(w for w in _ORG_WORDS if len(w) >= 4)  # 'fc' would match 'yusufcosta'
_NAME_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")  # KingsfordHealth, MetroFC, city_tv


def is_org_name(screen_name: str) -> bool:
    """True if a part of the name is an organisation word (News, FC...) or, for lower-case
    names, if it ends with a long one (kingsfordhealth)."""
    parts = [p.lower() for p in _NAME_PARTS.findall(screen_name)]
    return any(p in _ORG_WORDS or p.endswith(_ORG_SUFFIXES) for p in parts)


def author_class(
    screen_name: str, followers: int, statuses: int, verified: bool, age_days: float
) -> str:
    """bot / organization / influencer / regular from the name, audience and posting rate."""
    name = screen_name.lower()
    per_day = statuses / max(age_days, 1.0)
    if not verified and (_BOT_NAME.search(name) or per_day >= BOT_TWEETS_PER_DAY):
        return "bot"
    if is_org_name(screen_name):
        return "organization"
    if followers >= INFLUENCER_FOLLOWERS or (
        verified and followers >= VERIFIED_INFLUENCER_FOLLOWERS
    ):
        return "influencer"
    return "regular"


_AUTHOR_FIELDS = ("author", "followers", "statuses", "verified", "created_at", "account_created_at")


def classify_author(events: list[Event]) -> Iterable[Emit]:
    """Operator: add `author_class` (bot, organization, influencer or regular)."""
    out = []
    for e in events:
        p = required_payload(e, "classify_author", _AUTHOR_FIELDS)
        age = datetime.fromisoformat(p["created_at"]) - datetime.fromisoformat(
            p["account_created_at"]
        )
        cls = author_class(
            p["author"], p["followers"], p["statuses"], p["verified"], age.total_seconds() / 86_400
        )
        out.append(e.emit({**p, "author_class": cls}))
    return out
