"""What railtrace accepts of any input: the event times it can hold and the job id grammar."""

from __future__ import annotations

import re

#: The event times railtrace holds, [EARLIEST_NS, LATEST_NS): from the Unix epoch to the start
#: of 2106. The store's narrowest time type sets it (the per-minute fault rollup and
#: `inserted_at` are ClickHouse `DateTime`, 32-bit seconds, which wraps on 2106-02-07): a later
#: time would be filed in another year. Decoders refuse times outside it, and the API accepts
#: no window outside it.
EARLIEST_NS = 0
LATEST_NS = 4_291_747_200 * 1_000_000_000


#: Scheduler job ids (Slurm `1234_5`, Kubernetes names, run names): letters, digits and
#: `._:@+-`, starting with a letter or digit, at most 128 long. One grammar for every layer:
#: the readers refuse any other (it could not be asked for by URL), the API accepts no other.
JOB_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@+-]*$"
JOB_ID_MAX_LENGTH = 128
_JOB_ID = re.compile(JOB_ID_PATTERN[:-1] + r"\Z")


def valid_job_id(job_id: str) -> bool:
    """Whether `job_id` is one railtrace can store and serve.

    >>> valid_job_id("4812_3"), valid_job_id("../etc"), valid_job_id("a b"), valid_job_id("")
    (True, False, False, False)
    """
    return len(job_id) <= JOB_ID_MAX_LENGTH and _JOB_ID.match(job_id) is not None


def in_time_range(ts_ns: int) -> bool:
    """Whether railtrace can hold an event at `ts_ns` (see LATEST_NS).

    >>> in_time_range(1_700_000_000 * 10**9), in_time_range(LATEST_NS), in_time_range(-1)
    (True, False, False)
    """
    return EARLIEST_NS <= ts_ns < LATEST_NS
