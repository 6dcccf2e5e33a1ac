"""What a run tells its user is in plain words: the demo's console output, summary.json and
report.html carry no Greek letter and no paper abbreviation (those live in docs/glossary.md)."""

from __future__ import annotations

import html
import re
import subprocess
import sys

# Greek letters (λ, θ, β, ρ, φ, μ, ...), Σ, and the papers' abbreviations and symbols as words.
PAPER = re.compile(
    r"[\u0370-\u03ff]|Σ|\b(PSPS|ODRP|VISP|BTUs?|MAPE|td|t_out|q_size|r_over|et_i|et|SLO|SLA)\b"
)


def visible(page: str) -> str:
    """The text a reader sees on a page: no style sheet, no embedded image, no tags."""
    page = re.sub(r"<style>.*?</style>", "", page, flags=re.DOTALL)
    page = re.sub(r"src='data:[^']*'", "", page)
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def paper_words(text: str) -> list[str]:
    return [text[max(0, m.start() - 30) : m.end() + 30] for m in PAPER.finditer(text)]


def test_the_demos_console_summary_and_report_speak_plain_words(tmp_path):
    out = tmp_path / "demo"
    args = ["demo", "--engine", "sim", "--out", str(out), "--objective-latency-p99-s", "2"]
    done = subprocess.run(
        [sys.executable, "-m", "elastream.cli", "--log-level", "debug", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    console = done.stdout + done.stderr
    assert "decision:" in console and "replicas" in console  # the lines checked are there
    assert paper_words(console) == []
    assert paper_words((out / "summary.json").read_text()) == []
    page = visible((out / "report.html").read_text())
    assert "Replica-seconds saved" in page and "Latency objective" in page
    assert paper_words(page) == []
    # the check itself finds what it looks for
    assert paper_words("θ=0.996 λ̂r=359 and td") != [] and paper_words("PSPS: td") != []
