"""The collectors' disk spool: order, restart, torn writes, and what a full spool gives up."""

from __future__ import annotations

from pathlib import Path

from railtrace.collectors.emit import Outgoing
from railtrace.collectors.spool import Spool


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
