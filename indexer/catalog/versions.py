"""Release tags in order: the one fact about versions that both the catalogue's build and its
records (an entry's ``versions:`` line) need, kept apart so neither imports the other."""

from __future__ import annotations

import re


# Megatron-LM numbered its releases v1.0 ... v2.6 (2020-2021), then by container month (23.04,
# 23.06), then core_v0.4.0 ... (from 2023-12): the core series comes last whatever its numbers
_LATER_SERIES = {"core_v": 1000}


def version_key(tag: str) -> tuple:
    """A tag's sort key: its numbers in order (``v2.19.3-1`` -> (2, 19, 3, 1)); a series a
    project started later (``_LATER_SERIES``) after the tags it follows."""
    numbers = tuple(int(n) for n in re.findall(r"\d+", tag))
    for prefix, rank in _LATER_SERIES.items():
        if tag.startswith(prefix):
            return (rank,) + numbers
    return numbers
