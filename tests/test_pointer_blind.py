"""``pointer_blind``: a shape is declared blind to its pointers only when every pointer value
really gives the same matches and spans; the RE2 prefilter never drops a pattern that matches."""

from __future__ import annotations

import random
import re

import re2

from service.batch.pointer_blind import POINTER, marked, prefilter, probe

# Atoms that meet pointer characters in every way: all hex alike, some hex only, no hex, W-like
# letters, case-insensitive groups.
ATOMS = [
    "0", "x", "a", "e", "f", "7", "g", "q", "Q", "z", " ", "k", r"\d", r"\w", r"\S", r"\s", r"\D", ".",
    "[0-9a-f]", "[0-9]", "[a-f]", "[^ ]", "[^0-9]", "[0-9a-fA-F]", "[g-z]", "[A-Z]", "[0-7]", "[b-y]",
    "0x", "0x[0-9a-f]+", "ed", "comm ",
]
QUANTIFIERS = ["", "", "", "+", "*", "?", "{2,4}", "+?", "*?", "{3}"]


def random_pattern(rng: random.Random, depth: int = 0) -> str:
    parts = []
    for _ in range(rng.randint(1, 5)):
        roll = rng.random()
        if roll < 0.12 and depth < 2:
            inner = "|".join(random_pattern(rng, depth + 1) for _ in range(rng.randint(1, 3)))
            opener = rng.choice(["(?:", "(", "(?i:", f"(?P<g{depth}{len(parts)}>"])
            # groups repeat at most once: nested repeats make Python's re backtrack for ages
            parts.append(opener + inner + ")" + rng.choice(["", "?"]))
        elif roll < 0.18:
            parts.append(rng.choice([r"\b", "^", "$", r"\B"]))
        else:
            parts.append("(?:" + rng.choice(ATOMS) + ")" + rng.choice(QUANTIFIERS))
    return "".join(parts)


def random_pointer(rng: random.Random, length: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(length))


def random_message(rng: random.Random) -> tuple[str, list[tuple[int, int]]]:
    words = ["comm", "rank", "ed", "fed", "deadbeef", "Q", "via", "7", "x0", "zz", "-", ""]
    pieces = []
    for _ in range(rng.randint(1, 3)):
        pieces.append(rng.choice(words))
        pieces.append("0x" + random_pointer(rng, rng.randint(4, 12)) + rng.choice(["", "", "g", "ed", "_"]))
    pieces.append(rng.choice(words))
    message = " ".join(p for p in pieces if p) if rng.random() < 0.8 else "".join(pieces)
    return message, [(m.start() + 2, m.end()) for m in POINTER.finditer(message)]


def with_pointers(rng: random.Random, message: str, spans: list[tuple[int, int]]) -> str:
    chars = list(message)
    for start, end in spans:
        chars[start:end] = random_pointer(rng, end - start)
    return "".join(chars)


def cases(seed: int, count: int):
    """(pattern, its ``re`` compilation, message, pointer spans) for ``count`` random draws."""
    rng = random.Random(seed)
    for _ in range(count):
        pattern = random_pattern(rng)
        try:
            original = re.compile(pattern, re.ASCII)
        except re.error:
            continue
        yield rng, pattern, original, *random_message(rng)


def groups(match: re.Match | None, count: int) -> tuple | None:
    """The match's span and its first ``count`` groups' (the rewrite adds markers after them)."""
    return None if match is None else match.regs[:count + 1]


def test_a_blind_verdict_holds_for_every_pointer_value():
    """Random patterns and messages: whenever the rewrite's match captured no W, the original
    pattern gives that match (or none, when it found none) on lines with other pointers."""
    decided = blind_matches = sensitive = 0
    for rng, pattern, original, message, spans in cases(20261129, 4000):
        made = probe(message)
        assert made is not None
        w, text = made
        rewrite = marked(pattern, w)
        assert rewrite is not None, pattern  # this grammar has nothing the rewrite refuses
        verdict = rewrite.match_on(text)
        if verdict is False:
            sensitive += 1
            continue
        decided += 1
        blind_matches += verdict is not None
        want = groups(verdict, original.groups)
        for _ in range(12):
            line = with_pointers(rng, message, spans)
            got = groups(original.search(line), original.groups)
            assert got == want, (pattern, message, line)
    # the property is not vacuous: both verdicts occur, and blind shapes do match
    assert decided > 1000 and sensitive > 200 and blind_matches > 300, (decided, sensitive, blind_matches)


def test_the_prefilter_never_drops_a_pattern_that_matches_some_line_of_the_shape():
    hits = 0
    for rng, pattern, original, message, spans in cases(7, 3000):
        _, text = probe(message)  # type: ignore[misc]
        wide = re2.compile(prefilter(pattern))
        for _ in range(6):
            if original.search(with_pointers(rng, message, spans)) is not None:
                hits += 1
                assert wide.search(text) is not None, (pattern, message)
    assert hits > 1000


def test_verdicts_on_patterns_like_the_kb():
    message = "NCCL INFO comm 0x7f3ab0c1d2e0 rank 3 nRanks 16 - Init COMPLETE"
    w, text = probe(message)  # type: ignore[misc]
    assert "0x" + w * 12 in text and w.lower() not in message.lower()
    blind = marked(r"comm (?P<comm>0x[0-9a-f]+) rank (?P<rank>\d+)", w).match_on(text)
    assert blind and blind.group("rank") == "3"
    assert marked(r"comm (\S+) rank", w).match_on(text)
    assert marked(r"Init FAILED", w).match_on(text) is None  # blind, and never matches
    assert marked(r"comm 0x\d+ ", w).match_on(text) is False  # digits only: depends on the value
    assert marked(r"comm 0x7f", w).match_on(text) is False  # a literal pointer prefix
    assert marked(r"(?i)COMM 0X[0-9A-F]+", w).match_on(text)  # case-insensitive classes cover a-f
    assert marked(r"(?<=comm )0x", w) is None  # lookarounds are not reasoned about
    assert marked(r"comm [[:xdigit:]]+", w) is None  # re would read a POSIX class otherwise


def test_no_free_letter_means_no_verdict():
    crowded = "0x1234abcd " + "qjkzvywutsrponmlihg"
    assert probe(crowded) is None


def test_the_prefilter_of_unreadable_syntax_matches_everything():
    assert prefilter(r"\Qa.b\E") == ""
    assert prefilter(r"(a)\1") == ""
    assert re2.compile(prefilter(r"[[:alpha:]]+ 0x[0-9a-f]{4,} \pL \x41 \x{42}")).search("ab 0xQQQQ é A B")


def _words(patterns: list[str]):
    from service.batch.proofs import SET_OPTIONS as _SET_OPTIONS, FilteredSet

    words = FilteredSet(_SET_OPTIONS)
    for pattern in patterns:  # one RE2 refuses has no words: its prefilter is always tested
        words.Add(pattern if _re2_ok(pattern) else "", check=False)
    words.Compile()
    return words


def test_a_prefilter_re2_refuses_makes_its_pattern_a_candidate_everywhere():
    from service.batch.proofs import _prefilter_set

    patterns = ["(", r"comm 0x[0-9a-f]+", "never"]
    found = _prefilter_set(patterns, _words(patterns))
    assert sorted(found.Match("comm 0xQQQQ")) == [0, 1]  # the broken one stays a candidate


def test_candidates_from_required_words_keep_every_pattern_that_matches_a_line_of_the_shape():
    """The prefilters are tested only on patterns whose own required words are in the probe
    (a probe changes nothing outside pointers). Random patterns with and without words: every
    pattern that matches some line of a message's shape is a candidate, and the candidates are
    among those that one set of all the prefilters gives (what was built before, ~4 s a run)."""
    from service.batch.proofs import SET_OPTIONS as _SET_OPTIONS, FilteredSet, _pointer_prefilter, _prefilter_set

    rng = random.Random(20261204)
    worded = [r"\bcomm 0x[0-9a-f]+", r"\brank \d+ via\b", r"\bdeadbeef\b", r"(?i)\bFED\b.*0x[0-9a-f]{4}",
              r"\bzz\b", r"\bx0 0x[0-9a-f]{4,}ed\b", r"\bcomm\b.*\bzz\b", r"\b7\b"]
    patterns = []
    for _ in range(600):
        pattern = random_pattern(rng)
        try:
            re2.compile(pattern)
        except re2.error:
            continue
        patterns.append(pattern)
    patterns += worded + [rng.choice(worded) + random_pattern(rng) for _ in range(200)]
    patterns = [p for p in patterns if _re2_ok(p)]
    found = _prefilter_set(patterns, _words(patterns))
    old = FilteredSet(_SET_OPTIONS)
    for pattern in patterns:
        old.Add(_pointer_prefilter(pattern) or "")
    old.Compile()
    compiled = [re2.compile(p) for p in patterns]
    checked = worded_hits = 0
    for _ in range(300):
        message, spans = random_message(rng)
        made = probe(message)
        assert made is not None
        candidates = set(found.Match(made[1]))
        assert candidates <= set(old.Match(made[1]))
        for _ in range(4):
            line = with_pointers(rng, message, spans)
            for index, regex in enumerate(compiled):
                if regex.search(line):
                    assert index in candidates, (patterns[index], message, line)
                    checked += 1
                    worded_hits += index >= len(patterns) - 208
    assert checked > 5000 and worded_hits > 200, (checked, worded_hits)


def _re2_ok(pattern: str) -> bool:
    try:
        re2.compile(pattern)
        return True
    except re2.error:
        return False
