"""Content classifier: word tokens, a multinomial naive Bayes model and classify_content."""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from elastream.examples.tweets import data
from elastream.examples.tweets.payload import required_payload
from elastream.model.events import Emit, Event

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
    """The (topic, sentence) pairs of data.TRAINING, the classifier's labelled corpus."""
    return [(topic, text) for topic, texts in data.TRAINING.items() for text in texts]


@functools.cache
def content_classifier() -> NaiveBayes:
    """The model trained on data.TRAINING: trained on first use, once per process, then cached."""
    return NaiveBayes.train(training_samples())


def classify_content(events: list[Event], drop_spam: bool = True) -> Iterable[Emit]:
    """Operator: add `topic` and `topic_score` (naive Bayes); spam is filtered if `drop_spam`."""
    out = []
    for e in events:
        p = required_payload(e, "classify_content", ("text",))
        topic, score = content_classifier().predict(p["text"])
        if topic == "spam" and drop_spam:
            continue  # filtered by design
        out.append(e.emit({**p, "topic": topic, "topic_score": round(score, 4)}))
    return out
