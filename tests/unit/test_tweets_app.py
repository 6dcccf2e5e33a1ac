"""The tweet-analysis example app: generator, parse, classifiers, SQLite store, example YAML."""

from __future__ import annotations

import json
import multiprocessing
import random
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import elastream
from elastream.config.files import load_pipeline
from elastream.examples import tweets as t
from elastream.model.events import Emit, Event

YAML = Path(elastream.__file__).parent / "examples" / "tweets.yaml"

# Held-out sentences, written for this test and absent from the training set.
HELD_OUT = {
    "news": (
        "Breaking: chemical spill on the river forces the closure of two schools",
        "Police closed the tunnel after a lorry caught fire this afternoon",
        "Thousands without electricity as the storm moves inland, officials say",
        "Emergency crews rescued a driver trapped after the crash on the motorway",
        "Update: evacuation order lifted for residents near the wildfire",
        "Reporters confirm the ferry ran aground near the harbour overnight",
    ),
    "sports": (
        "The striker scored twice and the team won the derby",
        "Great match tonight, the goalkeeper saved a penalty in the final minute",
        "The club confirmed the coach signed a new contract until the end of next season",
        "Playoff game seven tonight, the arena is sold out",
        "She won the sprint final and set a new championship record",
        "The captain is injured and will miss the cup match",
    ),
    "politics": (
        "The senate rejected the budget after a long debate",
        "Polls suggest the opposition candidate could win the election",
        "The minister faces questions in parliament about the contract scandal",
        "Voters will decide on the referendum next month",
        "The president vetoed the bill passed by congress",
        "Lawmakers from both parties demand an inquiry into campaign donations",
    ),
    "tech": (
        "The new laptop chip is faster and uses less battery",
        "A security vulnerability in the router firmware lets hackers in, update now",
        "We moved our database to the cloud and the app is faster",
        "The software update crashed the server for an hour",
        "Developers can now try the open source release of the compiler",
        "The phone camera uses machine learning to improve night photos",
    ),
    "health": (
        "The hospital is asking visitors to wear masks because covid cases are rising",
        "Book your vaccine appointment at the pharmacy this week",
        "Doctors say the new variant spreads faster but symptoms are milder",
        "Testing sites will stay open until the outbreak is under control",
        "Nurses warn that the intensive care ward is full",
        "Researchers found that exercise and sleep protect the heart",
    ),
    "entertainment": (
        "The band's new album is their best yet, listening on repeat",
        "Saw the movie premiere last night, the actors were brilliant",
        "The singer announced concert dates for the world tour",
        "Season two of the series arrives on the streaming service in June",
        "The film won three awards including best soundtrack",
        "Fans lined up for hours to get tickets for the show",
    ),
    "personal": (
        "Morning walk with my dog, then coffee and pancakes",
        "My sister is visiting this weekend and we are cooking dinner together",
        "So tired today, the baby kept us awake all night",
        "Lazy Sunday on the sofa with my cat and a blanket",
        "Happy birthday grandma, we love you",
        "Forgot my lunch at home again, going to be hungry",
    ),
    "spam": (
        "Click the link to win a free laptop, hurry, limited offer",
        "Earn cash daily from home, DM me for details",
        "Free crypto airdrop, send one coin to claim your tokens",
        "Buy followers cheap, instant delivery, order now",
        "You won a gift card, click here to claim your prize",
        "Double your money with our trading bot, guaranteed profit",
    ),
}


def make_events(payloads: list, first: int = 0, keys: list[str] | None = None) -> list[Event]:
    """Events at offsets first, first + 1, … of an operator's queue (their ids)."""
    return [
        Event(id=first + i, key=(keys[i] if keys else f"k{i}"), ts=float(i), payload=p)
        for i, p in enumerate(payloads)
    ]


def children(emits: list[Emit], operator: str) -> dict[str, list[Event]]:
    """Turn an operator's outputs into the next events per stream, as the runtime does."""
    out: dict[str, list[Event]] = {}
    for em in emits:
        p = em.parent
        queued = out.setdefault(em.stream or "out", [])
        queued.append(Event(len(queued), em.key or p.key, p.ts, em.payload, p.root))
    return out


def generated(n: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    return [t.generate_tweet(i, rng) for i in range(n)]


def row_count(db: Path) -> tuple[int, int]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT COUNT(*), COUNT(DISTINCT event_id) FROM tweets").fetchone()


# ------------------------------------------------------------------------------------ generator


def test_generator_is_deterministic_for_index_and_rng_state():
    assert generated(300, seed=11) == generated(300, seed=11)
    assert generated(50, seed=11) != generated(50, seed=12)
    rng = random.Random(3)
    rng.random()
    state = rng.getstate()
    first = t.generate_tweet(42, rng)
    rng.setstate(state)
    assert t.generate_tweet(42, rng) == first
    assert t.generate_tweet(43, random.Random(5)) != t.generate_tweet(42, random.Random(5))


def test_generated_tweets_are_realistic_and_about_half_a_percent_malformed():
    tweets = generated(12_000, seed=2024)
    good, bad = [], []
    for key, raw in tweets:
        assert isinstance(raw, str)
        try:
            good.append((key, json.loads(raw), t.parse_tweet(raw)))
        except (json.JSONDecodeError, t.MalformedTweet):
            bad.append(raw)
    share = len(bad) / len(tweets)
    assert 0.003 < share < 0.007, share
    for key, tweet, _ in good[:2000]:
        assert key == tweet["user"]["screen_name"]
        assert len(tweet["text"]) <= 280
        for tag in tweet["entities"]["hashtags"]:
            start, end = tag["indices"]
            assert tweet["text"][start:end] == "#" + tag["text"]
    ids = [p["tweet_id"] for _, _, p in good]
    assert len(set(ids)) == len(ids)
    langs = Counter(p["lang"] for _, _, p in good)
    assert langs.most_common(1)[0][0] == "en" and len(langs) >= 8
    assert 0.4 < langs["en"] / len(good) < 0.7


def test_author_activity_is_zipf_like():
    per_author = Counter(key for key, _ in generated(10_000, seed=8))
    counts = sorted(per_author.values(), reverse=True)
    top_1pct = sum(counts[: max(1, len(counts) // 100)]) / sum(counts)
    assert counts[0] > 20 * counts[len(counts) // 2]  # the busiest author dwarfs the median
    assert top_1pct > 0.2


# ---------------------------------------------------------------------------------------- parse


def good_tweet(**changes) -> dict:
    tweet = t.make_tweet(7, t.AUTHORS[3], "health", random.Random(1))
    tweet.update(changes)
    return tweet


def test_parse_keeps_the_fields_the_next_operators_need():
    tweet = good_tweet()
    out = list(t.parse(make_events([json.dumps(tweet)])))
    assert len(out) == 1 and out[0].stream is None
    p = out[0].payload
    assert p["tweet_id"] == tweet["id_str"]
    assert p["author"] == tweet["user"]["screen_name"] == t.AUTHORS[3].screen_name
    assert p["followers"] == t.AUTHORS[3].followers
    assert p["verified"] is t.AUTHORS[3].verified
    assert p["text"] == tweet["text"] and p["lang"] == tweet["lang"]
    assert p["hashtags"] == [h["text"] for h in tweet["entities"]["hashtags"]]
    assert p["created_at"].startswith("2020-03-15T12:00:0")
    json.dumps(p)  # what flows to the next queue must be JSON


def rejected_error(raw) -> str:
    [emit] = list(t.parse(make_events([raw])))
    assert emit.stream == "rejected"
    assert emit.payload["raw"] == raw
    return emit.payload["error"]


def test_parse_rejects_bad_tweets_naming_the_problem():
    raw = json.dumps(good_tweet())
    cut = raw[:57]
    assert rejected_error(cut).startswith("invalid JSON: ")
    assert " at line 1 column " in rejected_error(cut)
    assert f"of {len(cut)})" in rejected_error(cut)
    no_name = good_tweet()
    del no_name["user"]["screen_name"]
    assert rejected_error(json.dumps(no_name)) == "missing field user.screen_name"
    wrong = good_tweet()
    wrong["user"]["followers_count"] = "1.2K"
    assert "field user.followers_count: expected int, got str '1.2K'" in rejected_error(
        json.dumps(wrong)
    )
    assert "field user.verified: expected bool" in rejected_error(
        json.dumps(good_tweet(user={**good_tweet()["user"], "verified": 1}))
    )
    assert "not a Twitter date" in rejected_error(json.dumps(good_tweet(created_at="yesterday")))
    assert "field user: expected dict" in rejected_error(json.dumps(good_tweet(user="bob")))
    assert rejected_error("[1, 2]") == "expected a JSON object at the top level, got list"
    assert rejected_error(None) == "payload is a NoneType, expected a JSON string"


def test_every_generated_malformed_payload_is_rejected_and_nothing_else():
    tweets = generated(6000, seed=99)
    out = children(list(t.parse(make_events([raw for _, raw in tweets]))), "parse")
    assert len(out.get("rejected", [])) + len(out["out"]) == len(tweets)
    kinds = Counter(e.payload["error"].split(":")[0] for e in out["rejected"])
    assert kinds["invalid JSON"] >= 1 and sum(kinds.values()) >= 15, kinds


# ---------------------------------------------------------------------------- content classifier


def test_importing_the_package_trains_nothing_and_the_model_is_trained_once():
    code = (
        "import gc\n"
        "import elastream.examples.tweets as t\n"
        "print(sum(isinstance(o, t.NaiveBayes) for o in gc.get_objects()))\n"
        "print(t.content_classifier.cache_info().currsize)\n"
        "assert t.content_classifier() is t.content_classifier()\n"
        "print(t.content_classifier.cache_info().currsize)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["0", "0", "1"]  # no model after import; one after two calls


def test_naive_bayes_accuracy_on_held_out_sentences_is_far_above_chance():
    pairs = [(topic, text) for topic, texts in HELD_OUT.items() for text in texts]
    training = {text for _, text in t.training_samples()}
    assert not training & {text for _, text in pairs}, "held-out sentences must be unseen"
    correct = sum(t.content_classifier().predict(text)[0] == topic for topic, text in pairs)
    accuracy = correct / len(pairs)
    chance = 1 / len(t.data.TOPICS)
    assert accuracy >= 0.75 > 4 * chance, accuracy


def test_naive_bayes_learns_from_its_data_and_scores_are_probabilities():
    model = t.NaiveBayes.train(
        [("a", "apples and pears"), ("a", "green apples"), ("b", "red cars"), ("b", "fast cars")]
    )
    assert model.predict("I like apples")[0] == "a"
    label, score = model.predict("cars cars cars")
    assert label == "b" and 0.5 < score < 1.0
    assert model.predict("nothing known here") == ("unknown", 0.0)
    with pytest.raises(ValueError, match="no training samples"):
        t.NaiveBayes.train([])


def test_classifier_recovers_the_topic_of_generated_tweets():
    rng = random.Random(4)
    draws = [(topic, t.compose_text(topic, rng).text) for topic in t.data.TOPICS for _ in range(60)]
    model = t.content_classifier()
    accuracy = sum(model.predict(text)[0] == topic for topic, text in draws) / len(draws)
    assert accuracy > 0.85, accuracy


def parsed(texts: list[str]) -> list[Event]:
    tweets = [json.dumps(good_tweet(text=text, entities={})) for text in texts]
    return children(list(t.parse(make_events(tweets))), "parse")["out"]


def test_classify_content_adds_topic_and_filters_spam_by_design():
    events = parsed([HELD_OUT["sports"][0], HELD_OUT["spam"][0], HELD_OUT["health"][0]])
    kept = [em.payload for em in t.classify_content(events)]
    assert [p["topic"] for p in kept] == ["sports", "health"]
    assert all(0 < p["topic_score"] <= 1 for p in kept)
    every = [em.payload["topic"] for em in t.classify_content(events, drop_spam=False)]
    assert every == ["sports", "spam", "health"]
    with pytest.raises(ValueError, match="event 0 has no field 'text'"):
        list(t.classify_content(make_events([{"body": "x"}])))


# ----------------------------------------------------------------------------- author classifier


@pytest.mark.parametrize(
    ("name", "followers", "statuses", "verified", "age_days", "expected"),
    [
        ("promo_bot", 50, 900, False, 300, "bot"),  # name
        ("cash83920145", 50, 900, False, 300, "bot"),  # long digit tail
        ("anna_smith", 200, 40_000, False, 200, "bot"),  # 200 tweets a day
        ("anna_smith", 200, 40_000, True, 200, "regular"),  # verified accounts are not bots
        ("RivertonNews", 900, 9000, False, 2000, "organization"),
        ("kingsfordhealth", 900, 9000, False, 2000, "organization"),
        ("yusufcosta", 300, 900, False, 900, "regular"),  # contains 'fc', is not a club
        ("tara_lee", 250_000, 9000, False, 2000, "influencer"),
        ("tara_lee", 15_000, 9000, True, 2000, "influencer"),
        ("tara_lee", 15_000, 9000, False, 2000, "regular"),
    ],
)
def test_author_class_rules(name, followers, statuses, verified, age_days, expected):
    assert t.author_class(name, followers, statuses, verified, age_days) == expected


def test_author_classes_recover_the_generators_population():
    def predicted(a: t.Author) -> str:
        age = (t.BASE_TIME - a.created_at).total_seconds() / 86_400
        return t.author_class(a.screen_name, a.followers, a.statuses, a.verified, age)

    by_kind = Counter(a.kind for a in t.AUTHORS)
    assert all(by_kind[k] >= 20 for k in t.AUTHOR_KINDS), by_kind
    agree = sum(predicted(a) == a.kind for a in t.AUTHORS) / len(t.AUTHORS)
    assert agree > 0.95, agree


def test_classify_author_uses_the_parsed_fields():
    [event] = parsed(["Good morning everyone"])
    [emit] = t.classify_author([event])
    assert emit.payload["author_class"] == t.author_class(
        t.AUTHORS[3].screen_name,
        t.AUTHORS[3].followers,
        t.AUTHORS[3].statuses,
        t.AUTHORS[3].verified,
        (t.BASE_TIME - t.AUTHORS[3].created_at).total_seconds() / 86_400,
    )
    assert emit.payload["text"] == "Good morning everyone"


# ---------------------------------------------------------------------------------------- store


def store_payload(i: int) -> dict:
    return {
        "tweet_id": str(1000 + i),
        "author": f"user{i % 7}",
        "lang": "en",
        "topic": "news",
        "author_class": "regular",
        "text": f"tweet number {i}",
    }


def test_store_is_idempotent_per_event_id(tmp_path):
    db = tmp_path / "sub" / "tweets.db"
    events = make_events([store_payload(i) for i in range(25)])
    first = [em.payload for em in t.store(events, results_db=str(db))]
    assert all(p["inserted"] for p in first) and len(first) == 25
    assert [p["event_id"] for p in first] == [e.id for e in events]
    again = [em.payload for em in t.store(events[5:], results_db=str(db))]
    assert not any(p["inserted"] for p in again)
    assert row_count(db) == (25, 25)
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        row = conn.execute("SELECT * FROM tweets WHERE event_id = '3'").fetchone()
    assert row[:7] == ("3", "1003", "user3", "en", "news", "regular", "tweet number 3")


def test_store_reopens_a_database_deleted_between_runs(tmp_path):
    db = tmp_path / "tweets.db"
    events = make_events([store_payload(i) for i in range(3)])
    list(t.store(events, results_db=str(db)))
    for f in tmp_path.glob("tweets.db*"):
        f.unlink()
    assert all(em.payload["inserted"] for em in t.store(events, results_db=str(db)))
    assert row_count(db) == (3, 3)


def test_store_names_a_missing_field_and_writes_nothing(tmp_path):
    db = tmp_path / "tweets.db"
    events = make_events([store_payload(0), {"tweet_id": "1"}])
    with pytest.raises(ValueError, match="store: event 1 has no field 'author'"):
        list(t.store(events, results_db=str(db)))
    assert not db.exists() or row_count(db) == (0, 0)


def _writer(db: str, start: int, stop: int, go, results) -> None:
    """One replica in its own process: store events start..stop-1 in batches of 10."""
    events = make_events([store_payload(i) for i in range(start, stop)], first=start)
    go.wait(10)
    inserted = 0
    for b in range(0, len(events), 10):
        inserted += sum(em.payload["inserted"] for em in t.store(events[b : b + 10], db, 10_000))
    results.put(inserted)


def test_concurrent_writers_lose_nothing_and_duplicate_nothing(tmp_path):
    db = str(tmp_path / "tweets.db")
    ctx = multiprocessing.get_context("spawn")
    go, results = ctx.Event(), ctx.Queue()
    ranges = [(0, 200), (100, 300), (150, 400)]  # overlapping batches, as after a retry
    procs = [ctx.Process(target=_writer, args=(db, a, b, go, results)) for a, b in ranges]
    for p in procs:
        p.start()
    go.set()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    inserted = [results.get(timeout=5) for _ in procs]
    assert row_count(Path(db)) == (400, 400)
    assert sum(inserted) == 400  # each row was inserted by exactly one writer
    with sqlite3.connect(db) as conn:
        ids = {r[0] for r in conn.execute("SELECT event_id FROM tweets")}
    assert ids == {str(i) for i in range(400)}


# ------------------------------------------------------------------------------ whole pipeline


def test_pipeline_functions_end_to_end(tmp_path):
    db = tmp_path / "tweets.db"
    tweets = generated(600, seed=5)
    parsed_ = children(
        list(t.parse(make_events([r for _, r in tweets], keys=[k for k, _ in tweets]))), "parse"
    )
    content = children(list(t.classify_content(parsed_["out"])), "classify_content")["out"]
    authors = children(list(t.classify_author(content)), "classify_author")["out"]
    summaries = list(t.store(authors, results_db=str(db)))
    assert len(summaries) == len(authors) == row_count(db)[0]
    assert len(content) < len(parsed_["out"])  # spam was filtered
    assert all(e.key == e.payload["author"] for e in authors)
    with sqlite3.connect(db) as conn:
        topics = dict(conn.execute("SELECT topic, COUNT(*) FROM tweets GROUP BY topic").fetchall())
        classes = {r[0] for r in conn.execute("SELECT DISTINCT author_class FROM tweets")}
    assert "spam" not in topics and len(topics) >= 6
    assert classes >= {"regular", "organization", "influencer"}


# ----------------------------------------------------------------------------------------- YAML


def test_example_yaml_loads_and_needs_several_replicas_at_the_peak():
    pipeline = load_pipeline(YAML)
    pipeline.check_imports()
    assert pipeline.topological_order == ("parse", "classify_content", "classify_author", "store")
    assert pipeline.routes("parse") == {"out": ("classify_content",), "rejected": ("rejected",)}
    assert pipeline.operator("store").params["results_db"] == "{out}/tweets.db"
    peak = 2 * pipeline.sources[0].rate  # the demo's spike, about 100 events/s
    slowest = max(pipeline.operators, key=lambda op: op.service_time_ms)
    per_replica = 1000 / slowest.service_time_ms  # events/s one replica can serve
    assert per_replica < peak <= per_replica * slowest.replicas.max
    assert all(peak <= 1000 / op.service_time_ms * op.replicas.max for op in pipeline.operators)
