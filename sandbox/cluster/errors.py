"""Every error the sandbox raises; each message says what to do about it."""

from __future__ import annotations


class SandboxError(Exception):
    """Base class: the CLI prints these without a traceback."""


class GoMissingError(SandboxError):
    pass


class BuildError(SandboxError):
    pass


class BinaryMissingError(SandboxError):
    pass


class PortInUseError(SandboxError):
    pass


class StartupError(SandboxError):
    """A component exited or did not become ready; the message names its log file."""


class AlreadyRunningError(SandboxError):
    pass


class NodesNotReadyError(SandboxError, TimeoutError):
    """kwok did not report the nodes Ready in time."""
