"""BERT's uncased WordPiece tokenizer in plain Python: the ids ``tokenizers`` gives MiniLM.

Why: the ``tokenizers`` wheel brings huggingface_hub, hf_xet, fsspec, httpx and more, about
42 MB installed, to split a log line into a few dozen word pieces. This module reproduces what
the bundled ``tokenizer.json`` asks of it, and ``supports`` refuses any other configuration:

- added special tokens (``[CLS]``, ``[UNK]`` ...) are cut out of the raw text first;
- BertNormalizer: drop NUL, U+FFFD and control characters (tab, CR and LF count as space),
  map whitespace to a space, put spaces around CJK ideographs, NFD and drop non-spacing
  marks (``strip_accents`` follows ``lowercase``), lower-case character by character;
- BertPreTokenizer: split on whitespace, every punctuation character a word of its own;
- WordPiece: greedy longest match with ``##`` continuations, a word longer than
  ``max_input_chars_per_word`` or with no match is one ``[UNK]``;
- ``[CLS] ... [SEP]``, truncated to the model's ``max_seq_length``.

``tests/test_wordpiece.py`` compares it with ``tokenizers`` on every KB and eval line and on
generated text mixing scripts, accents, controls and special tokens.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any

# Rust's char::is_whitespace (the Unicode White_Space property) plus tab, LF and CR.
_WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000"
)
_CJK = (
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
)
_ASCII_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
# ASCII text (nearly every log line) takes a fast path: lower(), drop controls, split.
_ASCII_CONTROLS = {c: None for c in (*range(0, 9), 11, 12, *range(14, 32), 127)}
_ASCII_SPACES = {9: " ", 10: " ", 13: " "}
_ASCII_WORDS = re.compile(r"[!-/:-@\[-`{-~]|[^\s!-/:-@\[-`{-~]+")


def _is_control(c: str) -> bool:
    # Cc, Cf, Co, Cs; not Cn: an unassigned code point stays (and becomes [UNK]), as in Rust.
    return c not in "\t\n\r" and unicodedata.category(c) in ("Cc", "Cf", "Co", "Cs")


def _is_cjk(c: str) -> bool:
    cp = ord(c)
    return any(lo <= cp <= hi for lo, hi in _CJK)


def _is_punct(c: str) -> bool:
    return c in _ASCII_PUNCT or unicodedata.category(c).startswith("P")


@lru_cache(maxsize=65536)
def _normal_char(c: str) -> str:
    """What BertNormalizer makes of one non-ASCII character (possibly nothing, or several)."""
    if c == "\x00" or c == "\ufffd" or _is_control(c):
        return ""
    if c in _WHITESPACE:
        return " "
    if _is_cjk(c):
        return f" {c} "
    decomposed = unicodedata.normalize("NFD", c)
    kept = "".join(d for d in decomposed if unicodedata.category(d) != "Mn")
    return "".join(d.lower() for d in kept)


def _words(text: str) -> list[str]:
    """Normalised pre-tokens of a text with no special tokens in it."""
    if text.isascii():
        text = text.translate(_ASCII_CONTROLS).translate(_ASCII_SPACES).lower()
        return _ASCII_WORDS.findall(text)
    normal = "".join(c if c.isascii() and c.isprintable() else _normal_char(c) for c in text).lower()
    out: list[str] = []
    word: list[str] = []
    for c in normal:
        if c in _WHITESPACE:
            if word:
                out.append("".join(word))
                word = []
        elif _is_punct(c):
            if word:
                out.append("".join(word))
                word = []
            out.append(c)
        else:
            word.append(c)
    if word:
        out.append("".join(word))
    return out


class WordPiece:
    """``encode(text) -> list[int]`` for a BERT ``tokenizer.json`` that ``supports`` accepts."""

    def __init__(self, config: dict[str, Any], max_length: int) -> None:
        model = config["model"]
        self.vocab: dict[str, int] = model["vocab"]
        self.unk = self.vocab[model["unk_token"]]
        self.prefix: str = model["continuing_subword_prefix"]
        self.max_chars: int = model["max_input_chars_per_word"]
        special = config["post_processor"]["special_tokens"]
        self.cls = special["[CLS]"]["ids"][0]
        self.sep = special["[SEP]"]["ids"][0]
        self.max_length = max_length
        self.added = {t["content"]: t["id"] for t in config.get("added_tokens", [])}
        self._added_re = re.compile("|".join(re.escape(t) for t in sorted(self.added, key=len, reverse=True)))
        self._word_cache: dict[str, tuple[int, ...]] = {}

    def _word(self, word: str) -> tuple[int, ...]:
        cached = self._word_cache.get(word)
        if cached is not None:
            return cached
        if len(word) > self.max_chars:
            ids: tuple[int, ...] = (self.unk,)
        else:
            found: list[int] = []
            start = 0
            while start < len(word):
                end = len(word)
                piece = None
                while start < end:
                    sub = word[start:end] if start == 0 else self.prefix + word[start:end]
                    piece = self.vocab.get(sub)
                    if piece is not None:
                        break
                    end -= 1
                if piece is None:
                    found = [self.unk]
                    break
                found.append(piece)
                start = end
            ids = tuple(found)
        if len(self._word_cache) < 200_000:
            self._word_cache[word] = ids
        return ids

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        budget = self.max_length - 2
        pos = 0
        for m in self._added_re.finditer(text) if self._added_re.pattern else ():
            for word in _words(text[pos : m.start()]):
                ids.extend(self._word(word))
            ids.append(self.added[m.group()])
            pos = m.end()
            if len(ids) >= budget:
                break
        else:
            for word in _words(text[pos:]):
                ids.extend(self._word(word))
                if len(ids) >= budget:
                    break
        return [self.cls, *ids[:budget], self.sep]


def supports(config: dict[str, Any]) -> bool:
    """Whether a ``tokenizer.json`` is the uncased BERT WordPiece this module reproduces."""
    try:
        normalizer = config["normalizer"]
        post = config["post_processor"]
        return (
            config["model"]["type"] == "WordPiece"
            and normalizer["type"] == "BertNormalizer"
            and normalizer["clean_text"] is True
            and normalizer["handle_chinese_chars"] is True
            and normalizer["lowercase"] is True
            and normalizer["strip_accents"] in (None, True)
            and config["pre_tokenizer"]["type"] == "BertPreTokenizer"
            and post["type"] == "TemplateProcessing"
            and [next(iter(p)) for p in post["single"]] == ["SpecialToken", "Sequence", "SpecialToken"]
            and post["single"][0]["SpecialToken"]["id"] == "[CLS]"
            and post["single"][2]["SpecialToken"]["id"] == "[SEP]"
            and all(not t.get("normalized") and not t.get("lstrip") and not t.get("rstrip") and not t.get("single_word")
                    for t in config.get("added_tokens", []))
        )
    except (KeyError, TypeError, IndexError, StopIteration):
        return False
