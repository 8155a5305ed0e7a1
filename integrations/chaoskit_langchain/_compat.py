"""The LangChain releases this integration supports, and every use of LangChain's internals."""

from __future__ import annotations

import importlib.metadata
import re
import warnings
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from pydantic import ValidationError
from pydantic.v1 import ValidationError as ValidationErrorV1

from chaoskit import ChaosWarning

if TYPE_CHECKING:
    # no LangChain import at run time before check_installed below has checked the installed release
    from langchain_core.tools import BaseTool

__all__ = [
    "ARGUMENT_ERRORS",
    "LANGCHAIN",
    "LANGCHAIN_CORE",
    "SUPPORTED",
    "Supported",
    "chat_model_name",
    "check_installed",
    "check_version",
    "model_arg_keys",
    "own_run_methods",
    "retype",
    "sync_run",
]


class Supported(NamedTuple):
    """A distribution an integration works with: ``minimum <= version < below`` (release numbers only)."""

    distribution: str
    minimum: tuple[int, ...]
    below: tuple[int, ...]

    def __str__(self) -> str:
        return f"{self.distribution}>={_dotted(self.minimum)},<{_dotted(self.below)}"


#: the releases ``chaoskit_langchain`` is tested with; widen a range only after the tests pass against it. The
#: minimums are the lowest releases the integration tests pass on
#: (``tests/integrations/test_lowest_versions.py`` runs them there): ``ToolErrorMiddleware`` (used by the README
#: and the examples) came with langchain 1.4, which needs langchain-core 1.6 (``ToolCallRequest`` itself came
#: with langchain 1.3)
LANGCHAIN_CORE: Final = Supported("langchain-core", (1, 6), (2,))
LANGCHAIN: Final = Supported("langchain", (1, 4), (2,))
SUPPORTED: Final = (LANGCHAIN_CORE, LANGCHAIN)

#: what LangChain raises when it rejects a tool call's arguments before the tool runs (pydantic 2 or 1 schemas)
ARGUMENT_ERRORS: Final = (ValidationError, ValidationErrorV1)


def _dotted(release: tuple[int, ...]) -> str:
    return ".".join(map(str, release))


def _release(version: str) -> tuple[int, ...]:
    # "1.2.3rc1" -> (1, 2, 3): a pre-release of 2.0 counts as 2.0, outside a "<2" range
    found = re.match(r"\d+(?:\.\d+)*", version.strip())
    return tuple(int(part) for part in found.group().split(".")) if found else ()


def check_version(supported: Supported, version: str | None, *, integration: str, extra: str) -> None:
    """Refuse a missing or too old ``supported.distribution`` (ImportError); warn about a newer major release.

    Too old a release lacks APIs the integration uses, so it fails here with the range rather than later with
    an AttributeError; a newer one may well work, so it only gets a :class:`chaoskit.ChaosWarning`.
    """
    fix = f"pip install 'chaoskit[{extra}]' (or '{supported}')"
    if version is None:
        raise ImportError(f"{integration} needs {supported}, which is not installed: {fix}")
    release = _release(version)
    if release < supported.minimum:
        raise ImportError(f"{integration} needs {supported}; {supported.distribution} {version} is installed: {fix}")
    if release >= supported.below:
        warnings.warn(
            f"{integration} is tested with {supported}; {supported.distribution} {version} is installed and "
            f"may not work (its internals are used in {integration}._compat)",
            ChaosWarning,
            stacklevel=3,
        )


def check_installed(supported: Iterable[Supported], *, integration: str, extra: str) -> None:
    """:func:`check_version` for each distribution, with the version installed in this environment."""
    for each in supported:
        try:
            version: str | None = importlib.metadata.version(each.distribution)
        except importlib.metadata.PackageNotFoundError:
            version = None
        check_version(each, version, integration=integration, extra=extra)


def own_run_methods(cls: type[BaseTool]) -> tuple[Callable[..., Any] | None, Callable[..., Any] | None]:
    """The ``_run`` / ``_arun`` a hand-written ``BaseTool`` subclass defines itself (None: BaseTool's default).

    BaseTool's default ``_arun`` runs ``_run`` in an executor; wrapping both would count such a call twice.
    """
    from langchain_core.tools import BaseTool

    run = cls._run if cls._run is not BaseTool._run else None
    arun = cls._arun if cls._arun is not BaseTool._arun else None
    return run, arun


def sync_run(cls: type[BaseTool]) -> Callable[..., Any]:
    """The ``_run`` of a LangChain tool class (``StructuredTool._run`` raises NotImplementedError for a tool
    that has only a coroutine)."""
    return cls._run


def model_arg_keys(tool: BaseTool) -> frozenset[str] | None:
    """The argument names the model writes (injected and runtime parameters excluded); None when unknown."""
    try:
        schema = tool.tool_call_schema
        if isinstance(schema, dict):
            props = schema.get("properties")
            return frozenset(props) if isinstance(props, dict) else None
        # pydantic 2 models list model_fields, pydantic 1 models __fields__
        fields = getattr(schema, "model_fields", None) or getattr(schema, "__fields__", None)
        return frozenset(fields) if fields is not None else None
    except Exception:
        return None


def retype(tool: BaseTool, cls: type[BaseTool], update: dict[str, Any]) -> Any:
    """A copy of ``tool`` (pydantic ``model_copy`` with ``update``) whose class is ``cls``, a subclass.

    Setting ``__class__`` skips pydantic validation and keeps every field the user set, private ones too.
    """
    new = tool.model_copy(update=update)
    object.__setattr__(new, "__class__", cls)
    return new


def chat_model_name(serialized: Any, metadata: Any, invocation_params: Any) -> str | None:
    """The model a chat model call asked for, from what ``on_chat_model_start`` receives: LangChain's tracing
    metadata (``ls_model_name``), else the invocation parameters (``model`` / ``model_name``), else None."""
    for source, keys in ((metadata, ("ls_model_name",)), (invocation_params, ("model", "model_name"))):
        if isinstance(source, dict):
            for key in keys:
                if source.get(key):
                    return str(source[key])
    return None


check_installed(SUPPORTED, integration="chaoskit_langchain", extra="langchain")
