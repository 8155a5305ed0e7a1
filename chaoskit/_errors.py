"""Exceptions raised by chaoskit and by the faults it injects."""

from __future__ import annotations

import http

__all__ = ["ChaosWarning", "ChaoskitError", "ConfigError", "PlanError", "ToolHTTPError", "ToolTimeout"]


class ChaoskitError(Exception):
    """Base class of chaoskit's own errors (never of injected faults)."""


class PlanError(ChaoskitError, ValueError):
    """A fault plan or scenario is malformed.

    The message names the source (file or ``<python>``), the line where known, the field and what is allowed.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.source = source
        self.line = line
        self.field = field
        self.reason = message
        where = source or "<plan>"
        if line is not None:
            where = f"{where}:{line}"
        prefix = f"{where}: "
        if field:
            prefix += f"{field}: "
        super().__init__(prefix + message)


class ConfigError(ChaoskitError, ValueError, TypeError):
    """An argument of chaoskit's Python API (``configure``, ``@chaos``, ``episode``, the integrations) is not
    one it accepts. The message names the argument and says what is allowed.

    It is a ``ValueError`` and a ``TypeError`` too, so that code catching either of the exceptions Python's own
    argument checks raise keeps working.
    """


class ChaosWarning(UserWarning):
    """Something about a plan or an integration that a user should act on, but that does not stop the run."""


class ToolHTTPError(Exception):
    """An HTTP failure of a tool, as an HTTP client library would raise it.

    ``status`` is the status code; ``retry_after`` the seconds the server asked the caller to wait (429/503).
    """

    def __init__(self, status: int, message: str | None = None, *, retry_after: float | None = None) -> None:
        self.status = status
        self.retry_after = retry_after
        if message is None:
            message = default_http_message(status, retry_after)
        self.message = message
        super().__init__(message)

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_http_error, (self.status, self.message, self.retry_after))


def _rebuild_http_error(status: int, message: str, retry_after: float | None) -> ToolHTTPError:
    return ToolHTTPError(status, message, retry_after=retry_after)


class ToolTimeout(TimeoutError):
    """A tool did not answer in time."""


class ModelHTTPError(ToolHTTPError):
    """An HTTP failure of a model provider (a ``target: model`` fault): 429 rate limit, 529/503 overloaded, or
    any ``http`` status, with ``retry_after`` when the provider asked the caller to wait.

    The LangChain integration raises a subclass that is also ``langchain_core``'s ``ModelRateLimitError`` /
    ``ModelAPIError`` / ``ModelInvalidRequestError``, the types LangChain's ``ModelRetryMiddleware`` retries.
    """

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_model_error, (type(self), self.status, self.message, self.retry_after))


def _rebuild_model_error(
    cls: type[ModelHTTPError], status: int, message: str, retry_after: float | None
) -> ModelHTTPError:
    return cls(status, message, retry_after=retry_after)


class ModelTimeout(TimeoutError):
    """A model provider did not answer in time (a ``target: model`` ``timeout`` fault); the LangChain
    integration raises a subclass that is also ``langchain_core``'s ``ModelTimeoutError``."""


def http_reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Unknown Status"


def default_http_message(status: int, retry_after: float | None) -> str:
    text = f"HTTP {status} {http_reason(status)}"
    if status == 429:
        text += ": rate limit exceeded"
    elif status == 401:
        text += ": access token expired, re-authenticate and retry"
    elif status >= 500:
        text += ": the upstream service failed while handling the request"
    if retry_after is not None:
        text += f" (Retry-After: {retry_after:g}s)"
    return text
