"""The judge's tokens-per-minute limit (``judge.tokens_per_minute``), beside its requests per minute.

Providers cap the tokens a key may spend per minute as well as its requests. Before each HTTP attempt
the judge reserves its *estimated* tokens -- the prompt's tokens plus ``max_tokens`` (what a provider
counts against the limit before the reply is known) -- and waits while the tokens reserved over the last
60 seconds plus this reservation would pass the limit. Once the reply arrives, the reservation is
corrected to the tokens the server reports (``usage.prompt_tokens + usage.completion_tokens``); an
attempt that got no reply keeps its estimate.

The prompt's tokens are counted with ``tiktoken`` when it is installed (the model's encoding, else
``o200k_base``), else by the rule *one token per 4 characters of the messages' text, rounded up, plus 4
per message* (OpenAI's rule of thumb for English text and chat framing). :data:`TOKEN_RULE` says which.

One limiter serves every endpoint of a judge (providers count tokens per key). The clock and the sleep
are module attributes (:data:`clock`, :data:`sleep`) so that tests drive the limiter with a fake clock.
"""

from __future__ import annotations

import asyncio
import functools
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

__all__ = ["TOKEN_RULE", "TokenLimiter", "estimate_tokens"]

#: The clock the limiter reads (seconds, monotonic) and the sleep it waits with; tests replace both.
clock: Callable[[], float] = time.monotonic
sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep

_WINDOW = 60.0
_CHARS_PER_TOKEN = 4
_TOKENS_PER_MESSAGE = 4


@functools.lru_cache(maxsize=8)
def _encoding(model: str) -> Any:
    try:
        import tiktoken
    except ImportError:
        return None
    try:
        return tiktoken.encoding_for_model(model)
    except (KeyError, ValueError):
        try:
            return tiktoken.get_encoding("o200k_base")
        except Exception:  # noqa: BLE001 - an encoding that cannot be loaded (offline): the stated rule instead
            return None


def _token_rule() -> str:
    try:
        import tiktoken  # noqa: F401
    except ImportError:
        return f"ceil(characters / {_CHARS_PER_TOKEN}) + {_TOKENS_PER_MESSAGE} per message (tiktoken not installed)"
    return "tiktoken (the model's encoding, else o200k_base) + 4 per message"


#: How prompt tokens are estimated before a call (tiktoken when installed, else the characters rule).
TOKEN_RULE = _token_rule()


def estimate_tokens(messages: Sequence[Mapping[str, str]], max_tokens: int, model: str = "") -> int:
    """The tokens a call may spend, counted before it is made: its prompt's tokens plus ``max_tokens``."""
    enc = _encoding(model)
    texts = [str(m.get("content", "")) for m in messages]
    if enc is not None:
        prompt = sum(len(enc.encode(t, disallowed_special=())) for t in texts)
    else:
        prompt = sum(math.ceil(len(t) / _CHARS_PER_TOKEN) for t in texts)
    return prompt + _TOKENS_PER_MESSAGE * len(texts) + int(max_tokens)


class TokenLimiter:
    """At most ``tokens_per_minute`` tokens reserved over any 60 seconds (a sliding window).

    A reservation larger than the whole limit waits until the window is empty, then goes alone (it could
    never fit otherwise).
    """

    def __init__(self, tokens_per_minute: float) -> None:
        self.limit = float(tokens_per_minute)
        self._window: deque[list[float]] = deque()  # [start time, tokens] of each reservation, oldest first
        self._lock = asyncio.Lock()
        self.waited = 0.0  # seconds spent waiting for the limit (all reservations)

    def _drop_old(self, now: float) -> None:
        while self._window and self._window[0][0] <= now - _WINDOW:
            self._window.popleft()

    def in_window(self) -> float:
        """Tokens reserved over the last 60 seconds."""
        self._drop_old(clock())
        return float(sum(t for _, t in self._window))

    async def acquire(self, tokens: int) -> list[float]:
        """Wait until ``tokens`` fit under the limit, reserve them and return the reservation (for :meth:`settle`)."""
        async with self._lock:  # first come, first served: a large call is not starved by small ones
            while True:
                now = clock()
                self._drop_old(now)
                used = sum(t for _, t in self._window)
                if used + tokens <= self.limit or not self._window:
                    entry = [now, float(tokens)]
                    self._window.append(entry)
                    return entry
                # the earliest moment enough old reservations leave the window
                freed, wait_until = used, self._window[-1][0] + _WINDOW
                for start, t in self._window:
                    freed -= t
                    if freed + tokens <= self.limit:
                        wait_until = start + _WINDOW
                        break
                delay = max(wait_until - now, 1e-3)
                self.waited += delay
                await sleep(delay)

    def settle(self, reservation: list[float], actual: int | None) -> None:
        """Correct a reservation to the tokens the server reported (``None`` or 0: no usage came back; the
        estimate stays)."""
        if actual:
            reservation[1] = float(actual)
