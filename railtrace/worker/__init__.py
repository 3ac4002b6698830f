"""`railtrace worker`: the faust-streaming workers around the same core the embedded replay runs.

An adapter, not core: it may import faust and aiokafka; everything it decides, it decides by
calling `railtrace.streams` (decoders, Normalizer, LogParser, Correlator). The topics and the
broker connection are `railtrace.kafka`'s, shared with the sink, the collectors and the alerter.
"""
