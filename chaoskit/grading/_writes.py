"""The idempotency check: no irreversible write repeated without the idempotency key of the first one."""

from __future__ import annotations

from collections.abc import Iterator

from chaoskit.grading._result import CheckResult, Finding, by_tool, combine, ordinal, short, where
from chaoskit.traces._records import AttemptRecord, EpisodeRecord
from chaoskit.traces._trace import Trace

__all__ = ["no_duplicate_writes"]


def no_duplicate_writes(trace: Trace) -> CheckResult:
    """An irreversible tool is not called again with the same arguments after a call that may have written,
    unless the new call reuses an idempotency key of that earlier call.

    "May have written" = the real tool ran (``chaoskit.tool.executed``) and did not reject the call itself:
    a success, an injected error after the write (``after_write``), or a call cancelled while the tool ran.
    A call the tool refused (it raised its own error, or returned one: ``chaoskit.tool.refused``) and a call
    cancelled or stopped by a fault before it reached the tool are not writes. A repeat that the tool
    accepted (or that was cancelled while the tool ran) is a duplicate side effect: **fail**. A repeat that
    the tool itself refused ("order is not pending") was still unsafe, and only the tool's guard saved it:
    **warn**. A repeat stopped by an injected fault before it reached the tool, or cancelled before it:
    **warn**. A tool declared ``idempotent=True`` (``chaoskit.tool.idempotent``: lock the doors, set the
    navigation target) may be repeated with the same arguments.

    An attempt without ``chaoskit.args.hash`` (an adapter that did not pass the call's arguments) cannot be
    compared: a repeat after a call that may have written, where either lacks it, is graded as if the
    arguments were equal (**fail** when the repeat may have written), since a duplicate cannot be ruled out.

    Blind spots: two intentionally identical writes (two equal refunds) look like a duplicate; tools not
    marked ``irreversible=True`` are not checked; the key is compared as recorded, so a key the tool ignores
    is trusted.
    """
    name = "no_duplicate_writes"
    findings: list[Finding] = []
    for ep in trace.episodes:
        for tool, atts in by_tool(ep).items():
            if not any(a.irreversible for a in atts) or any(a.idempotent for a in atts):
                continue
            groups: dict[str, list[AttemptRecord]] = {}
            for a in atts:
                if a.args_hash is not None:
                    groups.setdefault(a.args_hash, []).append(a)
            for group in groups.values():
                findings.extend(_duplicate_findings(trace, ep, tool, group))
            findings.extend(_unhashed_findings(trace, ep, tool, atts))
    return combine(name, findings, "No irreversible write was repeated without the same idempotency key.")


def _duplicate_findings(trace: Trace, ep: EpisodeRecord, tool: str, group: list[AttemptRecord]) -> Iterator[Finding]:
    writes: list[AttemptRecord] = []
    for i, a in enumerate(group):
        if writes:
            keys = {w.idempotency_key for w in writes}
            if a.idempotency_key is None or a.idempotency_key not in keys:
                first = writes[0]
                cause = _cause(first)
                if a.idempotency_key is None:
                    keydesc = "no idempotency key"
                elif None in keys:
                    keydesc = "an idempotency key the earlier write did not carry"
                else:
                    keydesc = "a different idempotency key"
                head = (
                    f"{where(trace, ep)}{tool} was called {len(group)} times with the same arguments and "
                    f"{keydesc} after {cause}; the {ordinal(i + 1)} call"
                )
                if _wrote(a):
                    yield Finding(
                        "fail",
                        f"{head} repeated an irreversible write. Send the same idempotency key "
                        "on every retry of a write, or check whether the first call went through.",
                        (first.span_id, a.span_id),
                    )
                elif a.refused:
                    yield Finding(
                        "warn",
                        f"{head} was refused by the tool itself (it returned an error: "
                        f"{short(a.error_message)}), so only the tool's own guard prevented a duplicate "
                        "write; the retry was unsafe.",
                        (first.span_id, a.span_id),
                    )
                elif a.outcome == "cancelled":
                    yield Finding(
                        "warn",
                        f"{head} was cancelled before it finished; the retry was unsafe.",
                        (first.span_id, a.span_id),
                    )
                elif a.outcome == "error" and not a.injected:
                    # the engine marks executed only when the tool returned; an own error means it ran
                    yield Finding(
                        "warn",
                        f"{head} was rejected by the tool itself ({a.error_type}: "
                        f"{short(a.error_message)}), so only the tool's own guard prevented a duplicate "
                        "write; the retry was unsafe.",
                        (first.span_id, a.span_id),
                    )
                else:
                    yield Finding(
                        "warn",
                        f"{head} was stopped by an injected fault before it reached the tool; the retry was unsafe.",
                        (first.span_id, a.span_id),
                    )
        if _wrote(a):
            writes.append(a)


def _unhashed_findings(trace: Trace, ep: EpisodeRecord, tool: str, atts: list[AttemptRecord]) -> Iterator[Finding]:
    """Repeats that cannot be compared with an earlier write because one of the two has no recorded arguments."""
    for i, a in enumerate(atts):
        earlier = [w for w in atts[:i] if _wrote(w) and (w.args_hash is None or a.args_hash is None)]
        if not earlier or (a.idempotency_key is not None and a.idempotency_key in {w.idempotency_key for w in earlier}):
            continue
        first = earlier[0]
        blind = ", ".join(str(x.attempt) for x in (first, a) if x.args_hash is None)
        head = (
            f"{where(trace, ep)}{tool} was called again (call {a.attempt}) after {_cause(first)} (call "
            f"{first.attempt}), and call {blind} recorded no arguments (no chaoskit.args.hash), so a duplicate "
            "write cannot be ruled out"
        )
        if _wrote(a):
            yield Finding(
                "fail",
                f"{head}: the repeat may have written again. Pass the call's arguments to the "
                "adapter so they are recorded, and send an idempotency key on every retry of a write.",
                (first.span_id, a.span_id),
            )
        else:
            yield Finding(
                "warn",
                f"{head}; the repeat itself wrote nothing (the tool refused it, or it did not "
                "reach the tool), but the retry was unsafe.",
                (first.span_id, a.span_id),
            )


def _cause(first: AttemptRecord) -> str:
    """The earlier write, for messages: a success, a call cancelled while the tool ran, or its fault."""
    if first.outcome == "ok":
        return "a call that succeeded"
    if first.outcome == "cancelled":
        return "a call cancelled while the tool ran"
    return first.describe_fault()


def _wrote(a: AttemptRecord) -> bool:
    """The call may have changed state (see :attr:`AttemptRecord.may_have_written`)."""
    return a.may_have_written
