"""What every scheduler reader shares: its result, the states that end a job, and how a
reader says "no" about one record without losing the rest of the file."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field, replace

from ..records import DeadLetter, JobFact, JobPlacement, LogOrigin, PlacedHost

#: Slurm's job states after which EndTime is when the job ended (before it, EndTime is the
#: time limit's projection, not an end).
SLURM_ENDED = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "REVOKED",
        "SPECIAL_EXIT",
        "TIMEOUT",
    }
)
#: The state of a job whose end was not seen (`ended_unseen`): no Slurm state, so never
#: taken for one the scheduler printed.
ENDED_UNSEEN = "ENDED"
#: States in which a job holds no hosts yet: read, counted, but no placement.
SLURM_WAITING = frozenset({"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "SUSPENDED"})


#: What a reader's own checks may miss on input no scheduler printed; `PlacementRead.take`
#: turns any of them into one record's dead letter.
UNFORESEEN = (ValueError, TypeError, AttributeError, KeyError, OverflowError, RecursionError)


@dataclass(slots=True)
class PlacementRead:
    """What one scheduler file gave: placements, records that could not be used (each a
    dead letter with its reason), and jobs read that hold no host yet."""

    placements: list[JobPlacement] = field(default_factory=list)
    dead_letters: list[DeadLetter] = field(default_factory=list)
    waiting: int = 0

    def refuse(self, source: str, line_no: int, reason: str, raw: str = "") -> None:
        self.dead_letters.append(
            DeadLetter(source, reason, raw.encode("utf-8", "replace")[:2048], line_no)
        )

    def take(
        self,
        source: str,
        line_no: int,
        make: Callable[[], JobPlacement | None],
        raw: Callable[[], str],
    ) -> None:
        """Add what one record (`make`) gives: a placement, a waiting job, or a dead letter
        with the reason. No record can stop the file: an error a reader did not foresee
        becomes a dead letter too, naming the error, so the records after it are still read.
        """
        try:
            placement = make()
        except RecordError as exc:
            self.refuse(source, line_no, str(exc), brief(raw))
            return
        except UNFORESEEN as exc:
            shown = brief(exc.__str__, 120)
            self.refuse(
                source, line_no, f"unreadable record ({type(exc).__name__}: {shown})", brief(raw)
            )
            return
        if placement is None:
            self.waiting += 1
        else:
            self.placements.append(placement)


def brief(text: Callable[[], str], limit: int = 2048) -> str:
    """`text()` cut to `limit`, or a word saying why it cannot be shown (a repr of a value
    nested thousands deep raises RecursionError)."""
    try:
        return text()[:limit]
    except (RecursionError, ValueError):
        return "(too deeply nested to show)"


def slurm_placement(
    job_id: str,
    hosts: tuple[PlacedHost, ...],
    state: str,
    start_ns: int | None,
    end_ns: int | None,
    origin: LogOrigin,
) -> JobPlacement:
    """A Slurm job's placement, dated by its start (0 when Slurm gave none); `end_ns` is kept
    only in a state that ended the job (before, EndTime is the time limit's projection)."""
    return JobPlacement(
        ts_ns=start_ns or 0,
        job_id=job_id,
        host="",
        hosts=hosts,
        scheduler="slurm",
        state=state,
        start_ns=start_ns,
        end_ns=end_ns if state in SLURM_ENDED else None,
        origin=origin,
    )


def ended_unseen(placement: JobPlacement, last_seen_ns: int, gone_ns: int) -> JobPlacement:
    """`placement`, read from the last record that listed the job running (at `last_seen_ns`),
    as ended by `gone_ns`, when the scheduler no longer held it: its end was not seen, so
    the state is ENDED_UNSEEN and `end_ns` the latest the end can be.

    >>> from railtrace.streams.records import LogOrigin
    >>> seen = slurm_placement("7", (), "RUNNING", 10, None, LogOrigin("scontrol:lab", 1))
    >>> ended = ended_unseen(seen, 40, 70)
    >>> (ended.state, ended.start_ns, ended.last_seen_ns, ended.end_ns)
    ('ENDED', 10, 40, 70)
    """
    return replace(placement, state=ENDED_UNSEEN, end_ns=gone_ns, last_seen_ns=last_seen_ns)


def uncabled(facts: Iterable[JobFact], cabled: Collection[str]) -> list[DeadLetter]:
    """A dead letter for each placement among `facts` naming hosts that `cables.csv` does not
    hold (`cabled`: a name the scheduler or an env dump spells unlike the plan, a host outside
    the fabric). The placements themselves are kept: their other hosts still place the job.

    The one check the embedded replay and the workers both run, on every placement whatever
    gave it (a scheduler record, a job's own env dump), so that the two report the same."""
    return [
        dead
        for fact in facts
        if isinstance(fact, JobPlacement) and (dead := _not_cabled(fact, cabled)) is not None
    ]


def _not_cabled(placement: JobPlacement, cabled: Collection[str]) -> DeadLetter | None:
    missing = [h.name for h in placement.hosts if h.name not in cabled]
    if not missing:
        return None
    shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
    return DeadLetter(
        placement.origin.source,
        f"job {placement.job_id}: {len(missing)} of its {len(placement.hosts)} hosts are not "
        f"in cables.csv ({shown}); their links cannot be placed",
        b"",
        placement.origin.line_no,
        {"job_id": placement.job_id},
    )


class RecordError(ValueError):
    """One record of a file (a job, a pod) that cannot be used; the reason is the message."""
