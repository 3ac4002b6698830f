"""Attribution: which link (or node) explains a job's stall, scored in event time.

`Correlator` is the stateful entry point; `profile` holds every tunable (the settings'
`[attribution]` section); `scoring` the weights; `verdicts` turns observations into a ranked
verdict (its `candidates` scored one by one, the culprit's failed side told by `diagnosis`).
Pure: no I/O, no clocks.
"""

from railtrace.streams.attribution.correlator import Correlator, CorrelatorStats
from railtrace.streams.attribution.profile import AttributionProfile
from railtrace.streams.attribution.scoring import TimeWindow

__all__ = ["AttributionProfile", "Correlator", "CorrelatorStats", "TimeWindow"]
