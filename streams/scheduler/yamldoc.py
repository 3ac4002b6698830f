"""YAML documents as `kubectl get pods -o yaml` prints them (and as pods are pasted into
tickets), read safely: plain data only, and no anchors or aliases, which kubectl never
writes and which let a few lines of YAML expand into gigabytes."""

from __future__ import annotations

import re
from typing import Any

import yaml

#: The first line of a YAML pod or pod list: a document marker or one of these keys.
_START = re.compile(r"(?:---|apiVersion:|kind:|items:)")


class YamlError(ValueError):
    """Not YAML, or YAML railtrace will not read (anchors, aliases); the message says why."""


class _PlainLoader(yaml.SafeLoader):
    """SafeLoader that refuses aliases: kubectl output has none, a YAML bomb needs them."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise YamlError(f"alias at line {event.start_mark.line + 1}: not kubectl output")
        return super().compose_node(parent, index)


def looks_like(text: str) -> bool:
    first = next((ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")), "")
    return _START.match(first) is not None


def load(text: str) -> list[Any]:
    """Every document of `text`."""
    try:
        return list(yaml.load_all(text, Loader=_PlainLoader))
    except yaml.YAMLError as exc:
        raise YamlError(str(exc).replace("\n", " ")[:300]) from None
    except RecursionError:
        raise YamlError("nested too deeply") from None
