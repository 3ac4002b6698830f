"""`railtrace collect gnmi`: the gNMI collector as the registry sees it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..health import TargetState
from ..spec import CollectorSpec, Role, counter_names
from .config import GnmiTarget
from .metrics import GNMI_COUNTERS

if TYPE_CHECKING:
    from ..emit import Emit
    from ..metrics import CollectorMetrics
    from .session import TargetStatus


def build(targets: list[GnmiTarget], emit: Emit, metrics: CollectorMetrics) -> Role:
    """A session per target; a target is down for the health rules while its stream is."""
    from .collector import GnmiCollector
    from .metrics import gnmi_families

    collector = GnmiCollector(targets, emit)

    def state(s: TargetStatus) -> TargetState:
        # A stream whose every update is malformed delivers nothing: the target is down for
        # the health rules from its first such update, whatever its session says.
        if s.state == "streaming" and s.malformed_since is not None:
            error = f"every update malformed: {s.malformed_reason}"
            return TargetState(s.malformed_since, "malformed", error)
        return TargetState(s.down_since, s.state, s.last_error)

    def targets_now() -> dict[str, TargetState]:
        return {session.status.name: state(session.status) for session in collector.sessions}

    return Role(collector.run, lambda: gnmi_families(metrics.role, collector), targets_now)


SPECS = (
    CollectorSpec[list[GnmiTarget]](
        name="gnmi",
        help="Subscribe to every switch of `collect.gnmi` (gNMI dial-in, SAMPLE and ON_CHANGE).",
        config=list[GnmiTarget],
        default=list,
        metrics_listen="127.0.0.1:9464",
        build=build,
        families=("gnmi_session_up", *counter_names(GNMI_COUNTERS), "gnmi_odd_timestamps"),
    ),
)
