"""How long a polling collector waits after a poll: its interval while polls succeed, doubled
per failure in a row up to a ceiling, so a dead target is asked ever less often; jittered, so
targets that share an interval drift apart instead of being polled in step."""

from __future__ import annotations

import random

#: An interval is stretched or shrunk by up to this share, at random.
JITTER = 0.1


def next_delay(
    interval_s: float, backoff_max_s: float, failures_in_a_row: int, rng: random.Random
) -> float:
    """Seconds to the next poll: `interval_s`, doubled per failure in a row up to
    `backoff_max_s`, jittered by JITTER either way."""
    base = interval_s * float(2 ** min(failures_in_a_row, 30))
    base = min(base, max(backoff_max_s, interval_s))
    return base * rng.uniform(1 - JITTER, 1 + JITTER)
