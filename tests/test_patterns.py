"""The word prefilter of ``PatternSet`` finds exactly the patterns that occur in a line."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import re2

from indexer.kb_loader import load_kb
from indexer.normalize import normalize_line
from indexer.patterns import PatternSet, ShardedSet, prefilter, required_words, set_form
from indexer.schema import PatternEntry

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("pattern, words", [
    (r"^(?P<a>\w+) failed to \s+connect:\s*(?P<b>.*?)$", {"failed", "to", "connect"}),
    (r"Call to (?P<f>\w+) failed : (?P<e>.*)", {"to", "failed"}),  # "Call" may follow word characters
    (r"NCCL(?P<x>\d+) Using", set()),  # "Using" may go on with word characters
    (r"(?i)foo\bBAR[:=]x", {"bar"}),  # \b bounds a word; case folded
    (r"^Xid \(PCI:(?P<p>\S+)\): 79", {"xid", "pci"}),
    (r"(?:abc )+def", set()),
    (r"^(?:warm|cold) start$", {"start"}),  # a branch is unknown text, the rest still counts
    (r"^x(?:y z)+ end$", {"end"}),  # "z" ends the repeated part next to unknown text
    (r"^a (?:b c )+d$", {"a", "c"}),  # one copy of "b c " occurs; its edges count as unknown
    (r"^\d+ ranks?$", set()),  # "rank" may be followed by "s"
    (r"^été done$", {"done"}),  # only ASCII words are keys
])
def test_required_words(pattern, words):
    assert required_words(pattern) == words


def test_the_literal_is_the_longest_mandatory_stretch():
    assert prefilter(r"^Failed to open (?P<f>\S+): No such file here$")[1] == ": No such file here"
    assert prefilter(r"(?i)^Timeout after (?P<n>\d+) SECONDS$")[1] == "timeout after "
    assert prefilter(r"(?:a|b)")[1] == ""


def _random_pattern(rnd: random.Random) -> str:
    parts = []
    for _ in range(rnd.randint(1, 6)):
        kind = rnd.randrange(9)
        word = rnd.choice(["ab", "Ab", "x1", "_y", "rank", "é", "a_b"])
        parts.append([
            word, " ", r"\s+", r"\d+", r"\w*", r"[:=]", r"\b", f"(?:{word} )+", f"(?:{word}|c)",
        ][kind])
    pattern = "".join(parts)
    if rnd.random() < 0.3:
        pattern = "^" + pattern
    if rnd.random() < 0.3:
        pattern += "$"
    if rnd.random() < 0.2:
        pattern = "(?i)" + pattern
    return pattern


def _random_line(rnd: random.Random) -> str:
    pieces = ["ab", "AB", "Ab", "x1", "_y", "rank", "ranks", "é", "a_b", "c", " ", "  ", ":", "=", "7", "42", "-"]
    return "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 12)))


def test_what_a_match_holds_random_patterns_and_lines():
    """Soundness: whenever RE2 finds a pattern in a line, the line holds all its required words
    as tokens and its literal (as the prefilter tests it)."""
    rnd = random.Random(7)
    checked = 0
    for _ in range(1500):
        pattern = _random_pattern(rnd)
        rx = re2.compile(pattern)
        words, literal = prefilter(pattern)
        for _ in range(40):
            line = _random_line(rnd)
            if rx.search(line):
                checked += 1
                tokens = set(re2.findall(r"[a-z0-9_]+", line.lower()))
                assert words <= tokens, (pattern, line)
                assert literal in line or literal in line.lower(), (pattern, line)
    assert checked > 2000


def test_matching_is_running_every_pattern_on_kb_examples_and_their_mutants():
    kb = load_kb(ROOT / "kb")
    entries = [loaded.entry for loaded in kb.all_entries]
    patterns = PatternSet(entries)
    assert len(patterns._set._in_set) < len(entries) / 10  # the prefilter carries almost all of them
    reference = ShardedSet()  # the sets PatternSet ran before the prefilter
    for entry in entries:
        reference.Add(set_form(entry.pattern))
    reference.Compile()
    rnd = random.Random(3)
    messages = [normalize_line(example.line).message for entry in entries for example in entry.examples]
    rnd.shuffle(messages)
    messages = messages[:6000]
    for message in list(messages[:3000]):
        at = rnd.randrange(len(message) + 1)
        messages.append(message[:at] + rnd.choice(["x", "_", " ", "É", "9", ".", "ab"]) + message[at:])
    found = 0
    some = set(messages[::20])
    for message in messages:
        want = sorted(h for h in (reference.Match(message) or []) if not entries[h].context)
        got = sorted(h for h in patterns.matching(message) if not entries[h].context)
        assert got == want, message
        found += bool(got)
        if message in some:  # testing a few chosen patterns alone agrees with the set
            chosen = {*want[:2], *rnd.sample(range(len(entries)), 3)}
            assert sorted(patterns._set.matching(chosen, message)) == sorted(set(reference.Match(message) or ()) & chosen)
    assert found > 4000


def test_context_rules_still_apply():
    entries = [
        PatternEntry.model_validate({
            "id": "t.a", "component": "other", "severity": "info", "role": "context",
            "pattern": r"^hello world$", "context": {"level": "^E$"},
            "title": {"en": "a", "zh": "甲"}, "explanation": {"en": "a", "zh": "甲"},
            "examples": [{"line": "hello world"}], "source": "t/t t.py",
        }),
    ]
    patterns = PatternSet(entries)
    assert patterns.matching("hello world", {"level": "E"}) == [0]
    assert patterns.matching("hello world", {"level": "I"}) == []
    assert patterns.matching("hello there", {"level": "E"}) == []
