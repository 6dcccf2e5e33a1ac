"""The word-count application of Caladrius Section V: the book's lines as sentences, one output
per word keyed by the word, a counter that ends the topology; synthetic lines without the data."""

import random
from pathlib import Path

import pytest

from elastream.config.files import load_pipeline
from elastream.examples import wordcount
from elastream.model.events import Event

APP = Path(wordcount.__file__).with_name("wordcount.yaml")


def test_the_pipeline_validates_with_a_key_grouped_counter():
    pipeline = load_pipeline(APP)
    assert pipeline.topological_order == ("splitter", "counter")
    assert pipeline.operator("counter").grouping == "key_hash"


def test_the_splitter_emits_one_event_per_word_keyed_by_it():
    line = "In my younger and more vulnerable years"
    emits = list(wordcount.split([Event(0, "s0", 0.0, {"line": line})]))
    assert [e.key for e in emits] == line.split()
    assert [e.payload for e in emits] == [{"w": w} for w in line.split()]
    assert list(wordcount.count([Event(0, "the", 0.0, {"w": "the"})])) == []


def test_sentences_cycle_and_alpha_is_the_mean_words_per_line():
    lines = wordcount.sentences()
    key, payload = wordcount.sentence(len(lines) + 2, random.Random(0))
    assert (key, payload) == ("s2", {"line": lines[2]})
    expected = sum(len(line.split()) for line in lines) / len(lines)
    assert wordcount.words_per_sentence() == pytest.approx(expected)


def test_without_the_book_synthetic_lines_stand_in(monkeypatch):
    monkeypatch.setattr(wordcount, "book_path", lambda: None)
    wordcount.sentences.cache_clear()
    try:
        lines = wordcount.sentences()
        assert len(lines) == wordcount.FALLBACK_SENTENCES
        assert all(4 <= len(line.split()) <= 12 for line in lines)
    finally:
        wordcount.sentences.cache_clear()


def test_the_book_is_read_when_the_data_folder_has_it():
    path = wordcount.book_path()
    if path is None:
        pytest.skip("../shared/data/text/great_gatsby.txt is not on this machine")
    assert "Gatsby" in path.read_text(encoding="utf-8")[:2000]
    # counted with awk (CRs removed): 4,739 non-empty lines, 48,189 words, plus 12 hair spaces
    # (U+200A) that Python splits on and awk does not: 48,201 words
    assert len(wordcount.sentences()) == 4739
    assert wordcount.words_per_sentence() == pytest.approx(48201 / 4739, rel=1e-12)
