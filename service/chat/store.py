"""What the chat bots remember, in one local SQLite file: answers given, feedback, languages.

Curators need feedback rows that stand on their own (the line, the answer the bot gave, the
verdict), so a feedback row copies the answer rather than pointing at it. Answers themselves are
kept so a button click, which carries only a short id, can be tied back to what was shown and
so a Feishu card can be re-rendered in the other language. Old answers are pruned at start-up;
feedback and language choices are kept.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

ANSWER_RETENTION_S = 90 * 24 * 3600
VERDICTS = ("helped", "wrong")

SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    id TEXT PRIMARY KEY, platform TEXT NOT NULL, total INTEGER NOT NULL,
    skipped INTEGER NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS answers (
    id TEXT PRIMARY KEY, reply_id TEXT NOT NULL, position INTEGER NOT NULL,
    count INTEGER NOT NULL, line TEXT NOT NULL, answer_json TEXT NOT NULL, created REAL NOT NULL);
CREATE INDEX IF NOT EXISTS answers_by_reply ON answers (reply_id, position);
CREATE TABLE IF NOT EXISTS feedback (
    answer_id TEXT NOT NULL, user TEXT NOT NULL, platform TEXT NOT NULL, verdict TEXT NOT NULL,
    line TEXT NOT NULL, pattern_id TEXT, confidence REAL, answer_json TEXT NOT NULL,
    created REAL NOT NULL, PRIMARY KEY (answer_id, user));
CREATE TABLE IF NOT EXISTS language (
    user TEXT PRIMARY KEY, lang TEXT NOT NULL, updated REAL NOT NULL);
"""


class UnknownAnswer(KeyError):
    """A button referred to an answer this store no longer has (pruned, or another bot's DB)."""


@dataclass(frozen=True)
class StoredAnswer:
    id: str
    count: int
    answer: dict


@dataclass(frozen=True)
class StoredReply:
    id: str
    platform: str
    total: int
    skipped: int
    answers: list[StoredAnswer]


class ChatStore:
    """Thread-safe: bolt and lark run handlers on worker threads, so one connection is shared
    under a lock (SQLite serialises writers anyway)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(SCHEMA)
        self._lock = threading.Lock()
        self._prune()

    def _prune(self) -> None:
        cutoff = time.time() - ANSWER_RETENTION_S
        with self._lock:
            self._db.execute("DELETE FROM answers WHERE created < ?", (cutoff,))
            self._db.execute("DELETE FROM replies WHERE created < ?", (cutoff,))

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # ---- answers ---------------------------------------------------------------------------
    def save_reply(self, reply_id: str, platform: str, total: int, skipped: int,
                   answers: list[StoredAnswer]) -> None:
        now = time.time()
        with self._lock:
            self._db.execute("BEGIN")
            self._db.execute("INSERT INTO replies VALUES (?, ?, ?, ?, ?)", (reply_id, platform, total, skipped, now))
            self._db.executemany(
                "INSERT INTO answers VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(a.id, reply_id, i, a.count, a.answer["line"], json.dumps(a.answer, ensure_ascii=False), now)
                 for i, a in enumerate(answers)],
            )
            self._db.execute("COMMIT")

    def reply(self, reply_id: str) -> StoredReply:
        with self._lock:
            head = self._db.execute("SELECT platform, total, skipped FROM replies WHERE id = ?", (reply_id,)).fetchone()
            rows = self._db.execute(
                "SELECT id, count, answer_json FROM answers WHERE reply_id = ? ORDER BY position", (reply_id,)
            ).fetchall()
        if head is None:
            raise UnknownAnswer(reply_id)
        return StoredReply(reply_id, head[0], head[1], head[2],
                           [StoredAnswer(r[0], r[1], json.loads(r[2])) for r in rows])

    def answer(self, answer_id: str) -> dict:
        with self._lock:
            row = self._db.execute("SELECT answer_json FROM answers WHERE id = ?", (answer_id,)).fetchone()
        if row is None:
            raise UnknownAnswer(answer_id)
        return json.loads(row[0])

    # ---- feedback --------------------------------------------------------------------------
    def record_feedback(self, answer_id: str, verdict: str, user: str, platform: str) -> dict:
        """Store one person's verdict on one answer; clicking again replaces their verdict."""
        if verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, not {verdict!r}")
        answer = self.answer(answer_id)
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO feedback VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (answer_id, user, platform, verdict, answer["line"], answer.get("pattern_id"),
                 answer.get("confidence"), json.dumps(answer, ensure_ascii=False), time.time()),
            )
        return answer

    def feedback(self) -> Iterator[dict]:
        """Every verdict, oldest first, as self-contained records for curators."""
        with self._lock:
            rows = self._db.execute(
                "SELECT created, platform, user, verdict, line, pattern_id, confidence, answer_json, answer_id "
                "FROM feedback ORDER BY created"
            ).fetchall()
        for r in rows:
            yield {"created": r[0], "platform": r[1], "user": r[2], "verdict": r[3], "line": r[4],
                   "pattern_id": r[5], "confidence": r[6], "answer": json.loads(r[7]), "answer_id": r[8]}

    # ---- language --------------------------------------------------------------------------
    def language(self, user: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT lang FROM language WHERE user = ?", (user,)).fetchone()
        return row[0] if row else None

    def set_language(self, user: str, lang: str) -> None:
        if lang not in ("en", "zh"):
            raise ValueError(f"language must be 'en' or 'zh', not {lang!r}")
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO language VALUES (?, ?, ?)", (user, lang, time.time()))
