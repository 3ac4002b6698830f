"""Why a target stops for good rather than being retried."""

from __future__ import annotations


class TargetFailedError(Exception):
    """A target that retrying cannot fix: its configuration or its capabilities do not fit.

    The target's task ends with this as its status' `last_error`; the other targets go on.
    """
