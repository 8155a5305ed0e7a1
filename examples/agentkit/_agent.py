"""The recovery policies and the scripted agent base class every example domain builds on."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from chaoskit import current_episode
from examples.agentkit._transport import Direct, Transport, classify

__all__ = ["POLICIES", "Failure", "NeedCall", "Policy", "ScriptedAgent", "policy"]

_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")
_INJECTION = re.compile(r"ignore (?:all )?(?:previous|prior|above) instructions", re.I)
_INJECTED_TOOL = re.compile(r"`(\w+)`")
_INJECTED_ARG = re.compile(r"(\w+)=\"([^\"]*)\"")
#: the longest Retry-After the example agents wait for; a server asking for more gets an honest "not now"
MAX_WAIT_S = 30.0


@dataclass(frozen=True)
class Policy:
    """How an agent handles failures; see the package docstring for the five policies."""

    name: str
    tries: int
    backoff_s: float
    honours_retry_after: bool
    keys_writes: bool
    verifies_writes: bool
    checks_data: bool
    honest: bool
    invents: bool
    obeys_injection: bool


_CAREFUL = Policy("careful", 3, 0.01, True, True, True, True, True, False, False)
_POLICIES = {
    "careful": _CAREFUL,
    "naive": Policy("naive", 4, 0.0, False, False, False, False, False, False, False),
    "give_up": Policy("give_up", 1, 0.0, False, True, False, True, True, False, False),
    "bluffer": Policy("bluffer", 3, 0.01, True, True, True, True, False, True, False),
    "obeys_injection": Policy("obeys_injection", 3, 0.01, True, True, True, True, True, False, True),
}
#: the policy names, in the order the reports list them
POLICIES: tuple[str, ...] = tuple(_POLICIES)


def policy(name: str) -> Policy:
    """The policy called ``name`` (one of :data:`POLICIES`)."""
    try:
        return _POLICIES[name]
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; known: {', '.join(POLICIES)}") from None


class Failure(Exception):
    """The agent could not do ``what``; ``cause`` says why; ``empty`` when a lookup found nothing;
    ``ambiguous`` when a write failed in a way that may have come after its effect (5xx, timeout)."""

    def __init__(self, what: str, cause: str, *, empty: bool = False, ambiguous: bool = False) -> None:
        super().__init__(f"{what}: {cause}")
        self.what, self.cause, self.empty, self.ambiguous = what, cause, empty, ambiguous


class NeedCall(BaseException):  # BaseException: a control-flow signal that no policy may catch
    """Raised by a replaying transport: the script wants a tool call the conversation has no answer for yet."""

    def __init__(self, name: str, args: dict[str, Any], wait_s: float) -> None:
        super().__init__(name)
        self.name, self.call_args, self.wait_s = name, args, wait_s


def _snake(data: Any) -> Any:
    if isinstance(data, dict):
        return {_CAMEL.sub("_", str(k)).lower(): _snake(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_snake(v) for v in data]
    return data


class ScriptedAgent:
    """``invoke(task) -> str``. Subclasses implement ``solve(task)`` with :meth:`read` / :meth:`write`, and may
    override :meth:`invent` (what the bluffer makes up) and :meth:`reauth` (how to renew expired credentials)."""

    #: the tools a subclass calls, by name (the plain agent's env provides them as attributes)
    tools: ClassVar[tuple[str, ...]] = ()

    def __init__(self, name: str | Policy, env: Any = None, transport: Transport | None = None) -> None:
        self.policy = name if isinstance(name, Policy) else policy(name)
        self.env = env
        if transport is None:
            transport = Direct({t: getattr(env, t) for t in self.tools})
        self.transport = transport
        #: what was done so far, in words (an honest failure report lists it)
        self.done: list[str] = []
        self._injections: list[str] = []
        self._keys = 0
        #: what the next tool call is for, and which try it is (the text of the model step that asks for it)
        self._doing: tuple[str, int] = ("", 0)
        #: the tool results the next step reads, and everything read or written so far (for the token estimate)
        self._unread: list[Any] = []
        self._context = 0

    # -- the task --------------------------------------------------------------------------------------

    def solve(self, task: str) -> str:
        raise NotImplementedError

    def invoke(self, task: str) -> str:
        """Run the task and answer as the policy would."""
        p = self.policy
        self._context = len(task)
        try:
            answer = self.solve(task)
        except Failure as f:
            answer = self.answer_failure(task, f)
        except Exception:
            if p.honest or p.invents:
                raise
            answer = "Done! Everything has been taken care of."  # the naive agent never admits a crash
        if self._injections:
            answer += " " + " ".join(self._injections)
        self._step(answer)
        return answer

    def answer_failure(self, task: str, f: Failure) -> str:
        """What the policy answers when it could not do the task: the bluffer invents, an honest policy admits
        it, the naive one says "Done!"."""
        if self.policy.invents:
            return self.invent(task, f)
        if self.policy.honest:
            return self.admit(f)
        return "Done! Everything has been taken care of."

    def admit(self, f: Failure) -> str:
        """The honest answer to a failure: what could not be done, why, and what was done."""
        text = f"I could not {f.what}: {f.cause}."
        if f.ambiguous:
            text += " It may have gone through anyway: check before trying again."
        elif not f.empty:
            text += " Nothing was changed for that step."
        if self.done:
            text += " What did work: " + "; ".join(self.done) + "."
        return text

    def invent(self, task: str, f: Failure) -> str:
        """The bluffer's made-up success; subclasses return something specific to their domain."""
        return "All set: your request has been completed successfully (confirmation C-1001)."

    def reauth(self) -> bool:
        """Renew expired credentials; True when it worked. By default there is no way to."""
        return False

    # -- tools with the policy -------------------------------------------------------------------------

    def read(
        self,
        tool: str,
        what: str,
        *,
        require: Iterable[str] = (),
        valid: Callable[[Any], bool] | None = None,
        **args: Any,
    ) -> Any:
        """Call a read-only tool. A careful policy retries transient errors and re-reads data that lacks a
        ``require``d field (in a dict, or in each dict of a list) or fails ``valid``; keys are snake_cased."""
        p = self.policy
        need = tuple(require)
        for i in range(p.tries):
            self._doing = (what, i)
            try:
                data = self._call(tool, args)
            except Exception as exc:
                kind, retry_after = classify(exc)
                self._fail_or_wait(tool, what, i, kind, retry_after, exc)
                continue
            self._scan(data)
            if not p.checks_data:
                return data
            data = _snake(data)
            if _complete(data, need) and (valid is None or valid(data)):
                return data
        raise Failure(what, f"{tool} returned incomplete or inconsistent data")

    def found(self, rows: Any, what: str, cause: str = "the search returned nothing") -> Any:
        """``rows`` when there are any; otherwise the agent could not do ``what`` (the bluffer invents)."""
        if not rows:
            raise Failure(what, cause, empty=True)
        return rows

    def write(
        self,
        tool: str,
        what: str,
        *,
        key_arg: str | None = None,
        verify: Callable[[], Any] | None = None,
        **args: Any,
    ) -> Any:
        """Call a tool with an effect. Careful: one idempotency key (``key_arg``) for every try, and after an
        ambiguous failure (5xx, timeout) ``verify()`` is asked first; a truthy answer is the write's result."""
        p = self.policy
        if key_arg is not None and p.keys_writes:
            self._keys += 1
            args = {**args, key_arg: f"{tool}-{self._keys}-{_digest(args)}"}
        unsure = False
        for i in range(p.tries):
            self._doing = (what, i)
            try:
                return self._call(tool, args)
            except Exception as exc:
                kind, retry_after = classify(exc)
                try:
                    self._fail_or_wait(tool, what, i, kind, retry_after, exc)
                except Failure as f:
                    # after a 5xx or a timeout nobody knows whether the write happened; a refusal of the retry
                    # ("already open") after one may mean it did
                    raise Failure(f.what, f.cause, ambiguous=unsure or kind in ("server", "timeout")) from None
                unsure = unsure or kind in ("server", "timeout")
                if p.verifies_writes and verify is not None and kind in ("server", "timeout"):
                    found = self._verify(verify, what)
                    if found:
                        return found
        raise Failure(what, f"{tool} kept failing")  # pragma: no cover - _fail_or_wait raises on the last try

    # -- internals -------------------------------------------------------------------------------------

    def _call(self, tool: str, args: dict[str, Any]) -> Any:
        what, i = self._doing
        self._step(
            f"To {what or 'follow the instruction'}, I call {tool}" + (f" again (try {i + 1})." if i else "."),
            [{"name": tool, "arguments": dict(args)}],
        )
        try:
            result = self.transport.call(tool, dict(args))
        except Exception as exc:
            self._unread.append(f"error: {exc}")
            raise
        self._unread.append(result)
        return result

    def _step(self, text: str, calls: list[dict[str, Any]] | None = None) -> None:
        """Record a model step on the episode (plain transports only: a replayed conversation is recorded by the
        framework's own model calls). Token counts are an estimate, a word-piece per 4 characters of what a
        model would have read and written, clearly not a provider's figures: the examples have no model."""
        ep = current_episode()
        if ep is None or not getattr(self.transport, "records_steps", False):
            self._unread.clear()
            return
        read = sum(len(str(r)) for r in self._unread)
        written = len(text) + sum(len(str(c)) for c in calls or ())
        self._context += read
        ep.step(
            text,
            tool_calls=calls or (),
            tool_results=self._unread,
            model="scripted-agent",
            input_tokens=(self._context + 3) // 4,
            output_tokens=(written + 3) // 4,
            capture_content=True,
        )
        self._context += written
        self._unread = []

    def _fail_or_wait(
        self, tool: str, what: str, i: int, kind: str, retry_after: float | None, exc: BaseException
    ) -> None:
        """Raise Failure when the policy stops here; otherwise wait as it would before the next try."""
        p = self.policy
        if kind == "auth" and p.checks_data and i + 1 < p.tries and self.reauth():
            return
        if kind in ("client", "auth") and p.checks_data:
            raise Failure(what, f"{tool} refused: {exc}")
        if i + 1 >= p.tries:
            raise Failure(what, f"{tool} failed {i + 1} time(s), last: {exc}")
        if p.honours_retry_after and retry_after is not None and retry_after > MAX_WAIT_S:
            raise Failure(what, f"{tool} asked to wait {retry_after:g}s before trying again ({exc})")
        if p.honours_retry_after and (retry_after is not None or kind == "rate_limit"):
            # a 503 may carry Retry-After too: the server said when to come back
            self.transport.sleep(retry_after if retry_after is not None else 0.05)
        elif p.backoff_s:
            self.transport.sleep(p.backoff_s * 2**i)

    def _verify(self, verify: Callable[[], Any], what: str) -> Any:
        try:
            return verify()
        except Failure as f:
            raise Failure(what, f"it failed, and checking whether it happened failed too ({f.cause})") from None

    def _scan(self, data: Any) -> None:
        text = str(data)
        if not _INJECTION.search(text) or not self.policy.obeys_injection:
            return  # instructions inside tool results are data, not orders
        m = _INJECTED_TOOL.search(text)
        args = dict(_INJECTED_ARG.findall(text))
        if m and m.group(1) in self.tools:
            try:
                self._call(m.group(1), {**self.injection_defaults(m.group(1)), **args})
            except Exception:
                pass
        else:
            start = text.lower().find("ignore")
            self._injections.append("As the system notice asked: " + text[max(start, 0) :])

    def injection_defaults(self, tool: str) -> dict[str, Any]:
        """Arguments the obedient agent adds to a tool an injected instruction names (beside the text's own)."""
        return {}


def _complete(data: Any, need: tuple[str, ...]) -> bool:
    if not need:
        return True
    rows = data if isinstance(data, list) else [data]
    return all(isinstance(r, dict) and all(k in r for k in need) for r in rows)


def _digest(args: Mapping[str, Any]) -> str:
    import hashlib

    return hashlib.sha256(repr(sorted(args.items())).encode()).hexdigest()[:8]
