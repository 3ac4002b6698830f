"""The collectors' disk spool: order, restart, torn writes, and what a full spool gives up."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from railtrace.collectors.emit import Outgoing
from railtrace.collectors.spool import MARK_EVERY_S, Spool


def _sample(n: int, stream: str = "gnmi") -> Outgoing:
    return Outgoing(stream, f"leaf{n % 3}".encode(), f"sample {n}".encode() * 10, ts_ns=n)


def _state(n: int) -> Outgoing:
    return Outgoing("snmp", b"leaf1", f"trap {n}".encode(), state_change=True, ts_ns=n)


def _values(spool: Spool, limit: int = 10_000) -> list[bytes]:
    return [m.value for _, m in spool.peek(limit)]


def test_records_come_back_in_order_with_every_field(tmp_path: Path) -> None:
    spool = Spool(tmp_path, max_bytes=10**7, segment_bytes=1000)
    sent = [_sample(n) if n % 4 else _state(n) for n in range(50)]
    for m in sent:
        spool.append(m)
    assert [m for _, m in spool.peek(100)] == sent
    assert len(list(tmp_path.glob("*.seg"))) > 1  # the test crosses segment boundaries


def test_acknowledged_records_are_gone_and_spent_segments_deleted(tmp_path: Path) -> None:
    spool = Spool(tmp_path, max_bytes=10**7, segment_bytes=1000)
    for n in range(50):
        spool.append(_sample(n))
    head = spool.peek(30)
    spool.ack(head[-1][0])
    assert _values(spool) == [_sample(n).value for n in range(30, 50)]
    assert len(list(tmp_path.glob("*.seg"))) < 10
    spool.ack(spool.peek(100)[-1][0])
    assert spool.empty()
    assert spool.size_bytes() == 0


def test_a_restarted_spool_resends_exactly_what_was_not_acknowledged(tmp_path: Path) -> None:
    spool = Spool(tmp_path, max_bytes=10**7, segment_bytes=1000)
    for n in range(40):
        spool.append(_sample(n))
    spool.ack(spool.peek(25)[-1][0])
    spool.close()
    again = Spool(tmp_path, max_bytes=10**7, segment_bytes=1000)
    assert _values(again) == [_sample(n).value for n in range(25, 40)]
    again.append(_sample(40))  # and carries on numbering after what it found
    assert _values(again)[-1] == _sample(40).value


def test_a_torn_record_at_the_end_is_cut_off_on_open(tmp_path: Path) -> None:
    spool = Spool(tmp_path, max_bytes=10**7)
    for n in range(5):
        spool.append(_sample(n))
    spool.close()
    (segment,) = tmp_path.glob("*.seg")
    data = segment.read_bytes()
    segment.write_bytes(data[:-7])  # a crash in the middle of the last write
    again = Spool(tmp_path, max_bytes=10**7)
    assert _values(again) == [_sample(n).value for n in range(4)]
    again.append(_sample(9))
    assert _values(again) == [_sample(n).value for n in (0, 1, 2, 3, 9)]


def test_a_full_spool_drops_the_oldest_samples_first_and_never_a_state_change(
    tmp_path: Path,
) -> None:
    spool = Spool(tmp_path, max_bytes=6000, segment_bytes=1000)
    sent = [_state(n) if n % 10 == 0 else _sample(n) for n in range(200)]
    for m in sent:
        spool.append(m)
    kept = [m for _, m in spool.peek(1000)]
    assert spool.size_bytes() <= 6000 + 1000  # at most the segment being written over
    assert [m for m in kept if m.state_change] == [m for m in sent if m.state_change]
    samples = [m for m in kept if not m.state_change]
    assert samples == [m for m in sent if not m.state_change][-len(samples) :]  # the newest
    assert spool.dropped["gnmi"] == 180 - len(samples) > 0
    # order across kinds still holds
    assert kept == [m for m in sent if m in kept]


def test_dropping_in_the_segment_being_drained_keeps_the_cursor_honest(tmp_path: Path) -> None:
    spool = Spool(tmp_path, max_bytes=3000, segment_bytes=1000)
    for n in range(8):
        spool.append(_state(n) if n == 5 else _sample(n))
    spool.ack(spool.peek(2)[-1][0])  # the drain is part-way through the first segment
    for n in range(8, 60):
        spool.append(_sample(n))
    left = [m for _, m in spool.peek(1000)]
    assert _state(5) in left
    assert _sample(0) not in left and _sample(1) not in left  # acknowledged: not sent again
    times = [m.ts_ns or 0 for m in left]
    assert times == sorted(times)


def _on_disk(directory: Path) -> int:
    """Unacknowledged bytes as the files say: segments from the cursor's on, less its offset."""
    segment, offset = (int(x) for x in (directory / "cursor").read_text().split())
    sizes = [p.stat().st_size for p in directory.glob("*.seg") if int(p.stem) >= segment]
    return sum(sizes) - offset


def test_the_running_size_matches_the_disk_through_acks_drops_and_a_reopen(
    tmp_path: Path,
) -> None:
    spool = Spool(tmp_path, max_bytes=4000, segment_bytes=1000)
    steps = 0
    for n in range(120):
        spool.append(_state(n) if n % 7 == 0 else _sample(n))  # crosses segments, drops
        if n % 25 == 24:
            spool.ack(spool.peek(9)[-1][0])  # within a segment and across segments
        if spool.dir.joinpath("cursor").exists():
            assert spool.size_bytes() == _on_disk(tmp_path), n
            steps += 1
    assert steps > 90 and spool.dropped["gnmi"] > 0
    first = min(tmp_path.glob("*.seg"))
    leftover = first.read_bytes()
    head = spool.peek(10_000)
    spool.ack(next(p for p, _ in head if p.segment != head[0][0].segment))  # a segment spent
    assert not first.exists()
    spool.close()
    first.write_bytes(leftover)  # as a crash between saving the cursor and deleting it leaves
    again = Spool(tmp_path, max_bytes=4000, segment_bytes=1000)
    assert not first.exists()
    assert again.size_bytes() == _on_disk(tmp_path) > 0
    again.append(_sample(500))
    assert again.size_bytes() == _on_disk(tmp_path)
    again.ack(again.peek(10_000)[-1][0])
    assert again.size_bytes() == _on_disk(tmp_path) == 0


@pytest.mark.parametrize(
    ("max_bytes", "acks"), [(3000, 0.05), (10**7, 0.3)], ids=["dropping", "roomy"]
)
def test_the_oldest_unsent_age_is_never_less_and_less_than_a_second_more(
    tmp_path: Path, max_bytes: int, acks: float
) -> None:
    """Random appends (samples and state changes), pauses and acks against a model: the age
    of the message at the head of the queue, by the time it was appended."""
    dropped, now = 0, [0.0]
    for seed in range(10):
        now[0] = 1000.0
        spool = Spool(tmp_path / str(seed), max_bytes, segment_bytes=1000, clock=lambda: now[0])
        rng = random.Random(seed)
        appended: dict[bytes, float] = {}
        for n in range(300):
            now[0] += rng.choice([0.0, 0.01, 0.3, 0.7, 2.5])
            if rng.random() > acks:
                value = f"v{n}.".encode() * rng.randint(1, 8)
                appended[value] = now[0]
                spool.append(Outgoing("gnmi", b"k", value, state_change=rng.random() < 0.1))
            elif head := spool.peek(rng.randint(1, 20)):
                spool.ack(head[-1][0])
            first = spool.peek(1)
            if not first:
                assert spool.oldest_age_s() == 0.0
                continue
            age = now[0] - appended[first[0][1].value]
            assert age <= spool.oldest_age_s() < age + MARK_EVERY_S, (seed, n)
        dropped += spool.dropped.total()
        spool.close()
    assert (dropped > 0) is (max_bytes == 3000)
