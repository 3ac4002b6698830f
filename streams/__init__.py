"""The stream-processing core: raw inputs become canonical records, records become verdicts.

Everything in this package except `railtrace.streams.replay` is pure: functions and small state
machines over frozen records, with no I/O and no imports of faust, kafka, grpc, clickhouse or
fastapi. The embedded replay and (later) the Faust agents both drive the same code.
"""
