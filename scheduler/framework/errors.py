"""Every exception the scheduler raises on purpose, in one place."""

from __future__ import annotations


class SchedulerError(Exception):
    """Base of the scheduler's own errors."""


class ConfigError(SchedulerError, ValueError):
    """A configuration the scheduler refuses; the message names the field, e.g.
    "profiles[0].pluginConfig[1].args.targetUtilization: must be 0..100"."""
