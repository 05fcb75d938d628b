"""Release tags in order: the one fact about versions that both the catalogue's build and its
records (an entry's ``versions:`` line) need, kept apart so neither imports the other."""

from __future__ import annotations

import re


def version_key(tag: str) -> tuple:
    """A tag's sort key: its numbers in order (``v2.19.3-1`` -> (2, 19, 3, 1))."""
    return tuple(int(n) for n in re.findall(r"\d+", tag))
