"""The live pipeline: faust-streaming workers around the same core the embedded replay runs.

An adapter, not core: it may import faust and aiokafka; everything it decides, it decides by
calling `railtrace.streams` (decoders, Normalizer, LogParser, Correlator). Topics are described
once in `topics`, and in deploy/kafka/README.md for people.
"""
