"""Judge reply cache: in memory, optionally backed by a SQLite or JSONL file.

Keys are :func:`cache_key` hashes of everything that decides a judge's reply (provider, model,
messages, sampling settings). Only replies are stored, never failures, so a failed call is retried
on the next run. The file may be shared by several processes (SQLite locks; JSONL appends one line
per reply, and the last line for a key wins on load).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lmms_eval.utils import canonical_json, hash_string

logger = logging.getLogger(__name__)

CACHE_KEY_VERSION = 1


def cache_key(provider: str, model: str, payload: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of ``provider``, ``model`` and the request ``payload``."""
    return hash_string(
        canonical_json({"v": CACHE_KEY_VERSION, "provider": provider, "model": model, **payload})
    )


class JudgeCache:
    """Thread-safe mapping of cache key -> stored reply record (a JSON-ready dict)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path).expanduser() if path is not None else None
        self._memory: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self.hits = 0
        self.misses = 0
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self._is_jsonl:
                self._load_jsonl()
            else:
                self._open_sqlite()

    @property
    def _is_jsonl(self) -> bool:
        return self.path is not None and self.path.suffix.lower() == ".jsonl"

    def _open_sqlite(self) -> None:
        assert self.path is not None
        self._db = sqlite3.connect(str(self.path), timeout=30.0, check_same_thread=False)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS judge_cache (key TEXT PRIMARY KEY, record TEXT NOT NULL, created_at REAL)"
        )
        self._db.commit()

    def _load_jsonl(self) -> None:
        assert self.path is not None
        if not self.path.exists():
            return
        with self.path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                    self._memory[str(entry["key"])] = dict(entry["record"])
                except (ValueError, KeyError, TypeError):
                    logger.warning("judge cache %s: skipping unreadable line %d", self.path, number)

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored record for ``key`` (counted as a hit), or ``None`` (a miss)."""
        with self._lock:
            record = self._memory.get(key)
            if record is None and self._db is not None:
                row = self._db.execute("SELECT record FROM judge_cache WHERE key = ?", (key,)).fetchone()
                if row is not None:
                    record = json.loads(row[0])
                    self._memory[key] = record
            if record is None:
                self.misses += 1
                return None
            self.hits += 1
            return dict(record)

    def put(self, key: str, record: Mapping[str, Any]) -> None:
        """Store ``record`` under ``key`` (in memory and in the file, if any)."""
        data = dict(record)
        with self._lock:
            self._memory[key] = data
            if self._db is not None:
                self._db.execute(
                    "INSERT OR REPLACE INTO judge_cache (key, record, created_at) VALUES (?, ?, ?)",
                    (key, json.dumps(data, ensure_ascii=False), time.time()),
                )
                self._db.commit()
            elif self.path is not None:
                with self.path.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps({"key": key, "record": data}, ensure_ascii=False) + "\n")

    def __len__(self) -> int:
        with self._lock:
            if self._db is not None:
                return int(self._db.execute("SELECT COUNT(*) FROM judge_cache").fetchone()[0])
            return len(self._memory)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


__all__ = ["CACHE_KEY_VERSION", "JudgeCache", "cache_key"]
