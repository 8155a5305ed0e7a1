"""Binding a call's positional and keyword arguments to parameter names, cheaply, for every tool call."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["ArgBinder"]

_PLAIN = inspect.Parameter.POSITIONAL_OR_KEYWORD
_MISSING: Any = object()


class ArgBinder:
    """Maps a call's positional and keyword arguments to parameter names (for hashing, match, idempotency).

    ``static=True`` for a callable whose first parameter is not a receiver (a static method, a bound method).
    A function whose parameters are all plain (positional-or-keyword, no ``*args`` / ``**kwargs``) is bound
    by a precomputed table; anything else, and any call the table cannot bind exactly, by
    ``inspect.Signature.bind`` with the same result. A call that does not fit the signature is recorded as
    ``{"args": [...], **kwargs}``.
    """

    __slots__ = ("_defaults", "_names", "_nameset", "_simple", "first", "sig", "static")

    def __init__(self, func: Callable[..., Any], *, static: bool) -> None:
        try:
            self.sig: inspect.Signature | None = inspect.signature(func)
        except (TypeError, ValueError):
            self.sig = None
        self.static = static
        params = list(self.sig.parameters.values()) if self.sig is not None else []
        self.first = params[0].name if params else None
        self._names: tuple[str, ...] | None = None
        self._nameset: frozenset[str] = frozenset()
        self._defaults: dict[str, Any] = {}
        if self.sig is not None and all(p.kind is _PLAIN for p in params):
            self._names = tuple(p.name for p in params)
            self._nameset = frozenset(self._names)
            self._defaults = {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}
        #: a plain function with no receiver to leave out: a call giving every argument by position binds
        #: as ``dict(zip(names, args))``
        self._simple = self._names is not None and (static or self.first not in ("self", "cls"))

    def bind(self, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Mapping[str, Any]:
        """The arguments by parameter name, defaults included, the receiver (``self`` / ``cls``) left out."""
        names = self._names
        if self._simple and instance is None and not kwargs and names is not None and len(args) == len(names):
            # zip's default (not strict), unspelled: a keyword argument costs zip() more than the pairing (~0.1 µs)
            return dict(zip(names, args))  # noqa: B905
        sig = self.sig
        if sig is None:
            return {"args": list(args), **kwargs}
        # wrapt passes the instance (or class) apart from the arguments of a bound call; whatever the first
        # parameter is called, it is the receiver then, and it is not part of what the tool was asked
        receiver = instance is not None and not self.static and self.first is not None
        out = None if names is None else self._fast(names, (instance, *args) if receiver else args, kwargs)
        if out is None:
            out = self._slow(sig, instance if receiver else _MISSING, args, kwargs)
            if out is None:
                return {"args": list(args), **kwargs}
        first = self.first
        if first is not None and (receiver or (first in ("self", "cls") and out and not self.static)):
            out.pop(first, None)
        return out

    def _fast(self, names: tuple[str, ...], args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any] | None:
        """``Signature.bind`` + ``apply_defaults`` for plain parameters; None where it would not bind."""
        if len(args) > len(names):
            return None
        out = dict(zip(names, args))  # noqa: B905 (as in bind: fewer arguments than names pair the first ones)
        if kwargs:
            for key in kwargs:
                if key in out or key not in self._nameset:
                    return None
            out.update(kwargs)
        if len(out) < len(names):
            defaults = self._defaults
            for name in names[len(args) :]:
                if name not in out:
                    value = defaults.get(name, _MISSING)
                    if value is _MISSING:
                        return None
                    out[name] = value
        if kwargs:
            # in parameter order, as Signature.bind gives them
            out = {name: out[name] for name in names}
        return out

    @staticmethod
    def _slow(
        sig: inspect.Signature, receiver: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> dict[str, Any] | None:
        try:
            bound = sig.bind(receiver, *args, **kwargs) if receiver is not _MISSING else sig.bind(*args, **kwargs)
        except TypeError:
            return None
        bound.apply_defaults()
        out = dict(bound.arguments)
        for name, param in sig.parameters.items():
            if param.kind is inspect.Parameter.VAR_KEYWORD and name in out:
                out.update(out.pop(name))
        return out
