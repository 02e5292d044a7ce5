"""The watcher's exceptions."""


class WatcherError(Exception):
    """Base of every error the watcher raises on purpose."""


class ConfigError(WatcherError):
    """The configuration (file, environment or flags) is invalid; the message says which part."""


class ProviderError(WatcherError):
    """A metrics provider request failed. `reason` is a short label used in /metrics."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class StoreError(WatcherError):
    """The window store (Redis) is unreachable or answered nonsense."""
