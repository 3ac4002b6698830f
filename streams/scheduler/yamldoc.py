"""YAML documents as `kubectl get pods -o yaml` prints them (and as pods are pasted into
tickets), read safely: plain data only (every scalar a string), and no anchors or aliases,
which kubectl never writes and which let a few lines of YAML expand into gigabytes."""

from __future__ import annotations

import re
from typing import Any

import yaml

#: The first line of a YAML pod or pod list: a document marker or one of these keys.
_START = re.compile(r"(?:---|apiVersion:|kind:|items:)")


class YamlError(ValueError):
    """Not YAML, or YAML railtrace will not read (anchors, aliases); the message says why."""


def looks_like(text: str) -> bool:
    first = next((ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")), "")
    return _START.match(first) is not None


#: A document marker on a line of its own (or opening one): a stream of several documents.
_MARKER = re.compile(r"^---(?:[ \t]|$)", re.MULTILINE)


def has_documents(text: str) -> bool:
    """More than one YAML document: a file whose first document is in JSON's flow style (or
    damaged into something like it) is still read as the YAML stream it is."""
    return _MARKER.search(text) is not None


def load(text: str) -> list[Any]:
    """Every document of `text`, read by libyaml; refused if it holds an alias."""
    # Every scalar a string (BaseLoader): kubectl quotes its times, and a value YAML would
    # resolve (an unquoted date of month 13, an integer of 5,000 digits) must cost only the
    # pod that holds it, which the pod reader decides.
    loader = yaml.CBaseLoader if yaml.__with_libyaml__ else yaml.BaseLoader
    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, yaml.AliasEvent):
                line = event.start_mark.line + 1 if event.start_mark else 0
                raise YamlError(f"alias at line {line}: not kubectl output")
        return list(yaml.load_all(text, Loader=loader))
    except yaml.YAMLError as exc:
        raise YamlError(str(exc).replace("\n", " ")[:300]) from None
    except (RecursionError, ValueError, OverflowError) as exc:
        raise YamlError(f"{type(exc).__name__}: {str(exc)[:200]}") from None
