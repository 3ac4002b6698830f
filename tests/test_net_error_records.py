"""NetError's completion and async-event fields survive every way a record travels (Kafka,
the store's JSON column, a job view's snapshot), and records written before those fields
existed still read."""

from __future__ import annotations

import orjson
import pytest

from railtrace.streams import codec, wire
from railtrace.streams.attribution.jobs import JobView
from railtrace.streams.records import (
    AsyncEvent,
    Completion,
    ErrorSide,
    LogOrigin,
    NetError,
)

ORIGIN = LogOrigin("logs/j1/rank0.log", 7)
COMPLETION = NetError(
    1_700_000_000 * 10**9, "j1", "gpu3", 2211, "ib-completion", "10.0.0.5", "status=12 ...",
    ORIGIN, 1,
    Completion(12, "IBV_WC_RETRY_EXC_ERR", ErrorSide.FABRIC, 129, 0, 0, "Recv",
               "::ffff:10.0.0.1", ("::ffff:10.0.0.5",), "mlx5_3"),
)  # fmt: skip
EVENT = NetError(
    1_700_000_000 * 10**9, "j1", "gpu3", 2211, "ib-async-event", None, "port error",
    LogOrigin("logs/j1/rank0.log", 8), 0, None,
    AsyncEvent("port error", ErrorSide.FABRIC, "mlx5_0", 1),
)  # fmt: skip
#: A NetError as railtrace wrote it before the fields were read: to Kafka (tagged) and to the
#: store's `detail` column (untagged, the type comes from the `kind` column).
OLD_FIELDS = {
    "ts_ns": 1_700_000_000 * 10**9,
    "job_id": "j1",
    "host": "gpu3",
    "pid": 2211,
    "kind": "ib-completion",
    "peer": "10.0.0.5",
    "detail": "NET/IB : Got completion from peer 10.0.0.5<1> with error 12",
    "origin": {"source": "logs/j1/rank0.log", "line_no": 7},
}


@pytest.mark.parametrize("err", [COMPLETION, EVENT], ids=["completion", "async-event"])
def test_fields_round_trip_through_kafka_and_the_stores_json(err: NetError) -> None:
    assert wire.decode_records(wire.encode_records([err])) == [err]
    stored = {**orjson.loads(orjson.dumps(err)), "t": "NetError"}
    assert codec.decode(stored, NetError) == err


def test_records_written_before_the_fields_still_read_with_none_of_them() -> None:
    kafka = wire.decode_records(orjson.dumps([{**OLD_FIELDS, "t": "NetError"}]))
    store = codec.decode({**OLD_FIELDS, "t": "NetError"}, NetError)
    for err in (*kafka, store):
        assert isinstance(err, NetError)
        assert (err.cuda_dev, err.completion, err.async_event) == (None, None, None)
        assert err.side == ErrorSide.UNKNOWN


def test_a_job_views_snapshot_with_old_and_new_errors_restores_both() -> None:
    view = JobView("j1")
    view.add(COMPLETION)
    snap = orjson.loads(orjson.dumps(view.snapshot()))
    snap["evidence"].append(
        {**OLD_FIELDS, "t": "NetError", "origin": {"source": "o", "line_no": 1}}
    )
    restored = JobView.restore(snap)
    assert sorted(e.side for e in restored.net_errors) == [ErrorSide.FABRIC, ErrorSide.UNKNOWN]
