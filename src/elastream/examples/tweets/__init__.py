"""Tweet-analysis example app (PSPS Fig. 7): generate, parse, classify and store tweets."""

from elastream.examples.tweets import data
from elastream.examples.tweets.authors import author_class, classify_author, is_org_name
from elastream.examples.tweets.classifier import (
    NaiveBayes,
    classify_content,
    content_classifier,
    tokens,
    training_samples,
)
from elastream.examples.tweets.generator import (
    AUTHOR_KINDS,
    AUTHORS,
    BASE_TIME,
    Author,
    compose_text,
    generate_tweet,
    make_authors,
    make_tweet,
)
from elastream.examples.tweets.parser import REJECTED, MalformedTweet, parse, parse_tweet
from elastream.examples.tweets.results import SCHEMA, open_results_db, store

__all__ = [
    "AUTHORS",
    "AUTHOR_KINDS",
    "BASE_TIME",
    "REJECTED",
    "SCHEMA",
    "Author",
    "MalformedTweet",
    "NaiveBayes",
    "author_class",
    "classify_author",
    "classify_content",
    "compose_text",
    "content_classifier",
    "data",
    "generate_tweet",
    "is_org_name",
    "make_authors",
    "make_tweet",
    "open_results_db",
    "parse",
    "parse_tweet",
    "store",
    "tokens",
    "training_samples",
]
