"""Tweet generator: a fixed Zipf-active author population and raw JSON tweets about topics."""

from __future__ import annotations

import json
import math
import random
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import accumulate
from typing import Any

from elastream.examples.tweets import data
from elastream.examples.tweets.parser import TWITTER_DATE

N_AUTHORS = 3000
ZIPF_S = 0.9  # author of activity rank r posts with probability ∝ 1 / r^s
MALFORMED_SHARE = 0.005
BASE_TIME = datetime(2020, 3, 15, 12, 0, tzinfo=UTC)  # the COVID-19 period of PSPS's traces
TWEET_SPACING_S = 0.5  # tweet `index` is created about index * spacing after BASE_TIME
TWEPOCH_MS = 1288834974657  # epoch of Twitter's snowflake ids

AUTHOR_KINDS = ("bot", "organization", "influencer", "regular")
# Among the most active authors, bots and organisations are over-represented.
_KIND_WEIGHTS_TOP = (0.3, 0.3, 0.2, 0.2)
_KIND_WEIGHTS_REST = (0.04, 0.04, 0.02, 0.9)
_TOP_RANKS = 50

# What each kind of author tends to tweet about, as weights over data.TOPICS
# (news, sports, politics, tech, health, entertainment, personal, spam).
_TOPIC_WEIGHTS = {
    "bot": (0.1, 0.0, 0.0, 0.1, 0.0, 0.1, 0.0, 0.7),
    "organization": (0.4, 0.15, 0.1, 0.1, 0.25, 0.0, 0.0, 0.0),
    "influencer": (0.0, 0.15, 0.1, 0.2, 0.0, 0.35, 0.2, 0.0),
    "regular": (0.08, 0.15, 0.12, 0.08, 0.12, 0.15, 0.3, 0.0),
}


@dataclass(frozen=True, slots=True)
class Author:
    """A simulated account; `kind` is the truth the generator used (not put into the tweet)."""

    user_id: int
    screen_name: str
    name: str
    kind: str
    followers: int
    friends: int
    statuses: int
    verified: bool
    created_at: datetime


def _lognormal_int(rng: random.Random, median: float, sigma: float, low: int = 0) -> int:
    return max(low, round(rng.lognormvariate(math.log(median), sigma)))


def _bot_name(rng: random.Random) -> tuple[str, str]:
    word = rng.choice(data.BOT_WORDS)
    digits = str(rng.randrange(10**4, 10**8))
    style = rng.randrange(3)
    screen = (f"{word}bot{digits[:3]}", f"{word}_bot", f"{word}{digits}")[style]
    return screen, screen


def _org_name(rng: random.Random) -> tuple[str, str]:
    place, word = rng.choice(data.ORG_PLACES), rng.choice(data.ORG_WORDS)
    return f"{place}{word}", f"{place} {word}"


def _person_name(rng: random.Random, digits: bool) -> tuple[str, str]:
    first, last = rng.choice(data.FIRST_NAMES), rng.choice(data.LAST_NAMES)
    suffix = str(rng.randrange(10, 100)) if digits and rng.random() < 0.5 else ""
    sep = rng.choice(("", "_"))
    return f"{first}{sep}{last}{suffix}", f"{first.title()} {last.title()}"


@dataclass(frozen=True, slots=True)
class _Profile:
    """How one kind of author's numbers are drawn: log-normal (median, sigma) pairs."""

    followers: tuple[float, float]
    friends: tuple[float, float]
    tweets_per_day: tuple[float, float]
    p_verified: float
    age_days: tuple[int, int]
    min_followers: int = 0


_PROFILES = {
    "bot": _Profile((150, 1.0), (1500, 0.6), (160, 0.4), 0.0, (20, 400)),
    "organization": _Profile((40_000, 1.2), (800, 1.0), (15, 0.6), 0.6, (1000, 4500)),
    "influencer": _Profile((400_000, 1.0), (600, 1.0), (6, 0.6), 0.75, (700, 4500), 20_000),
    "regular": _Profile((180, 1.3), (300, 1.0), (3, 1.0), 0.001, (30, 4500)),
}


def _make_author(rank: int, taken: set[str], rng: random.Random) -> Author:
    weights = _KIND_WEIGHTS_TOP if rank < _TOP_RANKS else _KIND_WEIGHTS_REST
    kind = rng.choices(AUTHOR_KINDS, weights=weights)[0]
    while True:
        if kind == "bot":
            screen, name = _bot_name(rng)
        elif kind == "organization":
            screen, name = _org_name(rng)
        else:
            screen, name = _person_name(rng, digits=kind == "regular")
        if screen not in taken:
            break
        if kind != "bot":  # a clash: make it unique the way people do, with a number
            screen = f"{screen}_{rng.randrange(10, 100)}"
            if screen not in taken:
                break
    taken.add(screen)
    prof = _PROFILES[kind]
    age_days = rng.randrange(*prof.age_days)
    per_day = rng.lognormvariate(math.log(prof.tweets_per_day[0]), prof.tweets_per_day[1])
    return Author(
        user_id=10_000_000 + rank * 7919,
        screen_name=screen,
        name=name,
        kind=kind,
        followers=_lognormal_int(rng, *prof.followers, low=prof.min_followers),
        friends=_lognormal_int(rng, *prof.friends),
        statuses=max(1, round(per_day * age_days)),
        verified=rng.random() < prof.p_verified,
        created_at=BASE_TIME - timedelta(days=age_days, seconds=rng.randrange(86_400)),
    )


def make_authors(n: int = N_AUTHORS, seed: int = 20200315) -> tuple[Author, ...]:
    """The author population, most active first (rank 0 posts most)."""
    rng, taken = random.Random(seed), set[str]()
    return tuple(_make_author(rank, taken, rng) for rank in range(n))


AUTHORS = make_authors()
# Zipf-like activity: P(rank r) = r^-s / H(N, s), r = 1..N, sampled by inverse CDF.
_AUTHOR_CUM = tuple(accumulate((r + 1) ** -ZIPF_S for r in range(N_AUTHORS)))


def _fill(template: str, rng: random.Random) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: rng.choice(data.SLOTS[m.group(1)]), template)


class _TextBuilder:
    """Appends pieces of a tweet's text and records entity positions (code-point indices)."""

    def __init__(self) -> None:
        self.text = ""
        self.entities: dict[str, list[dict[str, Any]]] = {
            "hashtags": [],
            "user_mentions": [],
            "urls": [],
        }

    def add(self, piece: str, entity: str | None = None, **fields: Any) -> None:
        if self.text and not self.text.endswith(" ") and not piece.startswith(" "):
            self.text += " "
        start = len(self.text)
        self.text += piece
        if entity:
            self.entities[entity].append({**fields, "indices": [start, len(self.text)]})


def compose_text(topic: str, rng: random.Random) -> _TextBuilder:
    """A tweet body about `topic`: opener, a filled template, hashtags, maybe a mention and URL."""
    b = _TextBuilder()
    b.add(rng.choice(data.OPENERS) + _fill(rng.choice(data.TEMPLATES[topic]), rng))
    if rng.random() < 0.25:
        who = AUTHORS[rng.randrange(200)].screen_name
        b.add(f"@{who}", "user_mentions", screen_name=who)
    for tag in rng.sample(data.HASHTAGS[topic], k=rng.choice((0, 1, 1, 2))):
        b.add(f"#{tag}", "hashtags", text=tag)
    if rng.random() < (0.8 if topic in ("news", "spam") else 0.2):
        url = f"https://{rng.choice(data.URL_HOSTS)}/{rng.randrange(16**6):06x}"
        b.add(f"https://t.co/{rng.randrange(16**10):010x}", "urls", expanded_url=url)
    b.add(rng.choice(data.CLOSERS).strip())
    b.text = b.text.rstrip()
    return b


def _user_json(a: Author) -> dict[str, Any]:
    return {
        "id": a.user_id,
        "id_str": str(a.user_id),
        "screen_name": a.screen_name,
        "name": a.name,
        "followers_count": a.followers,
        "friends_count": a.friends,
        "statuses_count": a.statuses,
        "verified": a.verified,
        "created_at": a.created_at.strftime(TWITTER_DATE),
    }


def make_tweet(index: int, author: Author, topic: str, rng: random.Random) -> dict[str, Any]:
    """A well-formed tweet object (the fields of the Twitter v1.1 API the pipeline uses)."""
    created = BASE_TIME + timedelta(seconds=(index + rng.random()) * TWEET_SPACING_S)
    # Snowflake id: milliseconds since the Twitter epoch in the high bits, a sequence below.
    ms = int(created.timestamp() * 1000)
    tweet_id = ((ms - TWEPOCH_MS) << 22) | (index & 0xFFF)
    body = compose_text(topic, rng)
    langs, weights = zip(*data.LANG_MIX, strict=True)
    return {
        "id": tweet_id,
        "id_str": str(tweet_id),
        "created_at": created.strftime(TWITTER_DATE),
        "text": body.text,
        "lang": rng.choices(langs, weights=weights)[0],
        "user": _user_json(author),
        "entities": body.entities,
        "retweet_count": _lognormal_int(rng, 1 + author.followers / 2000, 1.5),
        "favorite_count": _lognormal_int(rng, 1 + author.followers / 500, 1.5),
        "source": rng.choice(("Twitter for Android", "Twitter for iPhone", "Twitter Web App")),
    }


def _corrupt(raw: str, rng: random.Random) -> str:
    """A deliberately malformed payload: truncated JSON, a missing field or a wrong type."""
    how = rng.randrange(3)
    if how == 0:
        return raw[: rng.randrange(1, len(raw))]  # a proper prefix of an object never parses
    broken = json.loads(raw)
    if how == 1:
        path = rng.choice(("user.screen_name", "text", "user", "id_str", "created_at"))
        parent, _, leaf = path.rpartition(".")
        (broken[parent] if parent else broken).pop(leaf)
        if path == "id_str":
            broken.pop("id")
    else:
        field, value = rng.choice((("followers_count", "1.2K"), ("verified", "yes")))
        broken["user"][field] = value
    return json.dumps(broken, ensure_ascii=False)


def generate_tweet(index: int, rng: random.Random) -> tuple[str, str]:
    """Source generator: (author screen name, raw JSON tweet); about 0.5% are malformed."""
    author = AUTHORS[rng.choices(range(N_AUTHORS), cum_weights=_AUTHOR_CUM)[0]]
    topic = rng.choices(data.TOPICS, weights=_TOPIC_WEIGHTS[author.kind])[0]
    raw = json.dumps(make_tweet(index, author, topic, rng), ensure_ascii=False)
    if rng.random() < MALFORMED_SHARE:
        raw = _corrupt(raw, rng)
    return author.screen_name, raw
