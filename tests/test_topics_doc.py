"""The topic table in deploy/kafka/README.md is the one people read: keep it in step with the
declarations the workers use."""

from pathlib import Path

import pytest

from railtrace.kafka import topics

README = (Path(__file__).resolve().parents[1] / "deploy" / "kafka" / "README.md").read_text()


@pytest.mark.parametrize("spec", topics.ALL, ids=lambda s: s.suffix)
def test_every_topic_is_documented_with_its_name(spec: topics.TopicSpec) -> None:
    assert f"`{topics.name('railtrace', spec)}`" in README


def test_documented_topics_are_all_declared() -> None:
    declared = {topics.name("railtrace", s) for s in topics.ALL}
    documented = {
        line.split("`")[1] for line in README.splitlines() if line.startswith("| `railtrace.")
    }
    assert documented == declared
