"""Per-token rate limit (off unless RATE_LIMIT_PER_MINUTE > 0): a sliding
window of one minute per token, in this process. Answers 429 with Retry-After."""
from __future__ import annotations

import math
import threading
import time
from collections import deque

from app.core.errors import TooManyRequests

WINDOW_SECONDS = 60.0


class RateLimiter:
    def __init__(self, per_minute: int, clock=time.monotonic):
        self.per_minute = per_minute
        self.clock = clock
        self._hits: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def hit(self, key: str) -> None:
        """Count one request for `key`, or raise 429 when the window is full."""
        if self.per_minute <= 0:
            return
        now = self.clock()
        with self._lock:
            hits = self._hits.setdefault(key, deque())
            while hits and hits[0] <= now - WINDOW_SECONDS:
                hits.popleft()
            if len(hits) >= self.per_minute:
                retry = max(1, math.ceil(hits[0] + WINDOW_SECONDS - now))
                raise TooManyRequests(
                    f"more than {self.per_minute} requests a minute with this token; retry in {retry} s",
                    extra={"headers": {"Retry-After": str(retry)}, "retry_after": retry},
                )
            hits.append(now)
            if len(self._hits) > 100_000:  # forget idle tokens so memory stays bounded
                self._hits = {k: v for k, v in self._hits.items() if v and v[-1] > now - WINDOW_SECONDS}
