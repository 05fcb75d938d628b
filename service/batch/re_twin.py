"""KB patterns (RE2 syntax) as Python's ``re`` reads them, where both read them alike.

The batch engine extracts fields and proves pointer blindness with ``re``: its match objects
give group spans per call more cheaply than RE2's, and its parse tree can be rewritten. That is
only right where ``re`` and RE2 agree on the syntax, so patterns with RE2-only constructs get
no twin and those paths fall back to RE2 or to per-line checks.
"""

from __future__ import annotations

import re
from typing import Any

_RE2_ONLY = re.compile(r"\[:|\\[pPCzQE]|\(\?[a-zA-Z]*U")


def python_twin(pattern: str) -> Any:
    """``pattern`` compiled by ``re`` with ASCII classes, as RE2 has them; False when the syntax
    is RE2-only (POSIX classes, Unicode classes, \\C, \\z, \\Q, the ungreedy flag) or does not
    compile. Sampled verification against the spine (``Engine.verify``) and the tests guard the
    equivalence."""
    if _RE2_ONLY.search(pattern):
        return False
    try:
        return re.compile(pattern, re.ASCII)
    except re.error:
        return False
