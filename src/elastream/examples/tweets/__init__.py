"""Tweet-analysis example app (PSPS Fig. 7): generate JSON tweets, parse them, classify them by
content and by author, and store the results in a SQLite database."""

from __future__ import annotations

import json
import math
import os
import random
import re
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import accumulate
from pathlib import Path
from typing import Any

from elastream.examples.tweets import data
from elastream.model.events import Emit, Event

TWITTER_DATE = "%a %b %d %H:%M:%S %z %Y"
REJECTED = "rejected"  # parse's output stream for malformed tweets (a dead-letter queue)

# ----------------------------------------------------------------------------- author population

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

# ----------------------------------------------------------------------------- tweet generator


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


# ----------------------------------------------------------------------------- parse


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


# ----------------------------------------------------------------------------- content classifier

_STOPWORDS = frozenset(data.STOPWORDS)
_URL = re.compile(r"https?://\S+")
_MENTION = re.compile(r"@\w+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")  # splits hashtags like #BreakingNews
_WORD = re.compile(r"[a-z][a-z0-9']*[a-z0-9]|[a-z]")


def tokens(text: str) -> list[str]:
    """Lower-case word tokens without URLs, mentions, stop words or a plural/possessive 's'."""
    text = _CAMEL.sub(" ", _MENTION.sub(" ", _URL.sub(" ", text))).lower()
    out = []
    for word in _WORD.findall(text):
        word = word.removesuffix("'s")
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        if word not in _STOPWORDS:
            out.append(word)
    return out


@dataclass(frozen=True)
class NaiveBayes:
    """A multinomial naive Bayes text classifier with Laplace smoothing."""

    classes: tuple[str, ...]
    log_prior: tuple[float, ...]
    log_likelihood: dict[str, tuple[float, ...]]  # word -> log P(word | class), per class

    @classmethod
    def train(cls, samples: Iterable[tuple[str, str]], alpha: float = 1.0) -> NaiveBayes:
        """Fit on (label, text) pairs.

        P(c) = N_c / N;  P(w | c) = (n_wc + alpha) / (n_c + alpha * |V|), where n_wc counts word
        w in class c's documents, n_c = sum_w n_wc and V is the training vocabulary."""
        docs: Counter[str] = Counter()
        words: dict[str, Counter[str]] = {}
        for label, text in samples:
            docs[label] += 1
            words.setdefault(label, Counter()).update(tokens(text))
        if not docs:
            raise ValueError("NaiveBayes.train: no training samples")
        classes = tuple(sorted(docs))
        vocab = sorted(set().union(*words.values()))
        total = sum(docs.values())
        denom = [sum(words[c].values()) + alpha * len(vocab) for c in classes]
        return cls(
            classes=classes,
            log_prior=tuple(math.log(docs[c] / total) for c in classes),
            log_likelihood={
                w: tuple(
                    math.log((words[c][w] + alpha) / d) for c, d in zip(classes, denom, strict=True)
                )
                for w in vocab
            },
        )

    def predict(self, text: str) -> tuple[str, float]:
        """(best class, its posterior probability); ('unknown', 0.0) if no word is known.

        log P(c | d) = log P(c) + sum_{w in d} log P(w | c) - log Z; the posterior is the
        softmax of the per-class sums (max subtracted first for numerical safety)."""
        scores = list(self.log_prior)
        known = False
        for word in tokens(text):
            row = self.log_likelihood.get(word)
            if row is not None:
                known = True
                scores = [s + x for s, x in zip(scores, row, strict=True)]
        if not known:
            return "unknown", 0.0
        top = max(scores)
        z = sum(math.exp(s - top) for s in scores)
        best = scores.index(top)
        return self.classes[best], 1.0 / z


def training_samples() -> list[tuple[str, str]]:
    return [(topic, text) for topic, texts in data.TRAINING.items() for text in texts]


CLASSIFIER = NaiveBayes.train(training_samples())


def _payload(e: Event, operator: str, needed: Sequence[str]) -> dict[str, Any]:
    """The event's dict payload, or an error naming the event and the first missing field."""
    p = e.payload
    missing = [k for k in needed if not isinstance(p, dict) or k not in p]
    if missing:
        raise ValueError(
            f"{operator}: event {e.id} has no field {missing[0]!r} in its payload "
            f"(is {operator} wired after the operator that adds it?)"
        )
    return p


def classify_content(events: list[Event], drop_spam: bool = True) -> Iterable[Emit]:
    """Operator: add `topic` and `topic_score` (naive Bayes); spam is filtered if `drop_spam`."""
    out = []
    for e in events:
        p = _payload(e, "classify_content", ("text",))
        topic, score = CLASSIFIER.predict(p["text"])
        if topic == "spam" and drop_spam:
            continue  # filtered by design
        out.append(e.emit({**p, "topic": topic, "topic_score": round(score, 4)}))
    return out


# ----------------------------------------------------------------------------- author classifier

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
        p = _payload(e, "classify_author", _AUTHOR_FIELDS)
        age = datetime.fromisoformat(p["created_at"]) - datetime.fromisoformat(
            p["account_created_at"]
        )
        cls = author_class(
            p["author"], p["followers"], p["statuses"], p["verified"], age.total_seconds() / 86_400
        )
        out.append(e.emit({**p, "author_class": cls}))
    return out


# ----------------------------------------------------------------------------- store

SCHEMA = """CREATE TABLE IF NOT EXISTS tweets (
    event_id TEXT PRIMARY KEY,
    tweet_id TEXT NOT NULL,
    author TEXT NOT NULL,
    lang TEXT,
    topic TEXT,
    author_class TEXT,
    text TEXT,
    stored_at TEXT NOT NULL
)"""
_INSERT = "INSERT OR IGNORE INTO tweets VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
_STORED = ("tweet_id", "author", "lang", "topic", "author_class", "text")


def open_results_db(path: str | Path, busy_timeout_ms: int = 10_000) -> sqlite3.Connection:
    """A new connection in WAL mode (readers never block the writer) with the table created."""
    if not str(path):
        raise ValueError("store: parameter results_db is empty")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=busy_timeout_ms / 1000, isolation_level=None)
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise sqlite3.OperationalError(f"{path}: cannot switch to WAL (journal mode {mode})")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(SCHEMA)
    except BaseException:
        conn.close()
        raise
    return conn


# One connection per process, thread and file, reused between calls: opening a WAL database and
# closing its last connection (which checkpoints) would cost several ms on every batch. The pid
# in the key keeps a forked child from using its parent's connection; the inode check reopens
# the file if it was deleted or replaced since (a new run in the same output directory).
_CONNECTIONS: dict[tuple[int, int, str, int], tuple[sqlite3.Connection, int]] = {}


def _inode(path: str) -> int:
    try:
        return os.stat(path).st_ino
    except FileNotFoundError:
        return -1


def results_db_connection(path: str, busy_timeout_ms: int = 10_000) -> sqlite3.Connection:
    """The calling thread's cached connection to `path` (see open_results_db)."""
    key = (os.getpid(), threading.get_ident(), str(path), int(busy_timeout_ms))
    cached = _CONNECTIONS.get(key)
    if cached is not None and cached[1] == _inode(path):
        return cached[0]
    if cached is not None:
        cached[0].close()
    conn = open_results_db(path, busy_timeout_ms)
    _CONNECTIONS[key] = (conn, _inode(path))
    return conn


def store(events: list[Event], results_db: str, busy_timeout_ms: int = 10_000) -> Iterable[Emit]:
    """Operator: one row per event in `results_db`, keyed by event id, in one transaction.

    INSERT OR IGNORE on the event-id primary key makes a retried batch write nothing twice;
    the summary emitted per event says whether this call inserted its row."""
    rows = [_payload(e, "store", _STORED) for e in events]
    stored_at = datetime.now(UTC).isoformat(timespec="milliseconds")
    conn = results_db_connection(results_db, busy_timeout_ms)
    try:
        conn.execute("BEGIN IMMEDIATE")  # take the write lock now, waiting up to busy_timeout
        inserted = [
            conn.execute(_INSERT, (e.id, *(p[k] for k in _STORED), stored_at)).rowcount == 1
            for e, p in zip(events, rows, strict=True)
        ]
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return [
        e.emit(
            {
                "event_id": e.id,
                "tweet_id": p["tweet_id"],
                "topic": p["topic"],
                "author_class": p["author_class"],
                "inserted": new,
            }
        )
        for e, p, new in zip(events, rows, inserted, strict=True)
    ]
