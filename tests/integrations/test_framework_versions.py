"""The LangChain/LangGraph releases the integrations support: pinned, checked on import, internals in one place."""

from __future__ import annotations

import ast
import importlib.metadata
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Callable
from pathlib import Path

import chaoskit_langchain._compat as lc_compat
import chaoskit_langgraph._compat as lg_compat
import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from chaoskit import ChaosWarning

ROOT = Path(__file__).resolve().parents[2]
INTEGRATIONS = ROOT / "integrations"

COMPAT = {"chaoskit_langchain": lc_compat, "chaoskit_langgraph": lg_compat}

#: the private ToolNode / BaseTool members the integrations use; only the compat modules may name them
FRAMEWORK_PRIVATES = frozenset(
    {
        "_tools_by_name",
        "_wrap_tool_call",
        "_awrap_tool_call",
        "_handle_tool_errors",
        "_handle_tool_error",
        "_run",
        "_arun",
    }
)
FRAMEWORKS = ("langchain", "langchain_core", "langgraph")


@pytest.mark.parametrize(
    "integration,supported",
    [(name, s) for name, module in COMPAT.items() for s in module.SUPPORTED],
    ids=lambda v: str(v),
)
def test_the_installed_release_is_in_the_supported_range(integration: str, supported: lc_compat.Supported) -> None:
    installed = importlib.metadata.version(supported.distribution)
    release = lc_compat._release(installed)
    assert supported.minimum <= release < supported.below, (
        f"{supported.distribution} {installed} is installed, but {integration} declares support for {supported} "
        f"only ({integration}/_compat.py). Run the LangChain/LangGraph tests against {installed}, then widen the "
        f"range in {integration}/_compat.py (and the extra in pyproject.toml); or install a supported release."
    )


def test_the_ranges_are_the_ones_documented() -> None:
    # the range the docs and pyproject promise; change them together (tests/integrations/test_lowest_versions.py runs the
    # integration tests at the minimums)
    assert [str(s) for s in lc_compat.SUPPORTED] == ["langchain-core>=1.6,<2", "langchain>=1.4,<2"]
    assert [str(s) for s in lg_compat.SUPPORTED] == ["langgraph>=1.2.11,<2", "langgraph-prebuilt>=1.1,<2"]
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    for extra, module in (("langchain", lc_compat), ("langgraph", lc_compat), ("langgraph", lg_compat)):
        for each in module.SUPPORTED:
            wanted = f"{each.distribution}>={'.'.join(map(str, each.minimum))},<{'.'.join(map(str, each.below))}"
            assert wanted in extras[extra], (extra, wanted, extras[extra])
    docs = (ROOT / "docs" / "langchain.md").read_text(encoding="utf-8")
    assert all(f"`{s}`" in docs for s in (*lc_compat.SUPPORTED, *lg_compat.SUPPORTED))


def _check(version: str | None) -> None:
    lc_compat.check_version(lc_compat.LANGCHAIN_CORE, version, integration="chaoskit_langchain", extra="langchain")


def test_too_old_a_release_is_refused_with_the_range_and_the_fix() -> None:
    with pytest.raises(ImportError) as info:
        _check("0.3.79")
    message = str(info.value)
    assert "chaoskit_langchain needs langchain-core>=1.6,<2" in message
    assert "langchain-core 0.3.79 is installed" in message
    assert "pip install 'chaoskit[langchain]'" in message


def test_a_missing_distribution_is_refused_with_the_fix() -> None:
    with pytest.raises(ImportError, match=r"needs langchain-core>=1\.6,<2, which is not installed: pip install"):
        _check(None)


@pytest.mark.parametrize("version", ["2.0.0", "2.0.0a1", "3.1"])
def test_a_newer_major_release_only_warns(version: str) -> None:
    with pytest.warns(ChaosWarning, match=rf"tested with langchain-core>=1\.6,<2; langchain-core {version} is"):
        _check(version)


@pytest.mark.parametrize("version", ["1.6", "1.6.0rc1", "1.8.3", "1.99.0.post1"])
def test_a_release_in_range_passes_silently(version: str) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _check(version)


FAKE_VERSION = textwrap.dedent(
    """
    import importlib.metadata, sys, warnings
    real = importlib.metadata.version
    fake = dict(arg.split("=") for arg in sys.argv[2:])
    importlib.metadata.version = lambda name: fake.get(name) or real(name)
    warnings.simplefilter("default")
    try:
        __import__(sys.argv[1])
    except ImportError as exc:
        print("ImportError:", exc)
    else:
        print("imported")
    """
)


def _import_with(module: str, **versions: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", FAKE_VERSION, module, *(f"{k}={v}" for k, v in versions.items())],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{ROOT}:{INTEGRATIONS}"},
    )


def test_importing_with_too_old_a_release_fails_before_using_it() -> None:
    proc = _import_with("chaoskit_langchain", **{"langchain-core": "0.3.79"})
    assert "ImportError: chaoskit_langchain needs langchain-core>=1.6,<2; langchain-core 0.3.79" in proc.stdout, (
        proc.stdout + proc.stderr
    )


def test_importing_with_a_newer_major_release_warns() -> None:
    proc = _import_with("chaoskit_langgraph", **{"langgraph-prebuilt": "2.0.0"})
    assert "imported" in proc.stdout, proc.stdout + proc.stderr
    assert "ChaosWarning: chaoskit_langgraph is tested with langgraph-prebuilt>=1.1,<2" in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    ("distribution", "version", "message"),
    [
        # langchain 1.0.2 has no ToolCallRequest: a raw ImportError from the middleware's import before
        ("langchain", "1.0.2", "chaoskit_langchain needs langchain>=1.4,<2; langchain 1.0.2 is installed"),
        # langchain 1.3 has ToolCallRequest but not the README's ToolErrorMiddleware
        ("langchain", "1.3.18", "chaoskit_langchain needs langchain>=1.4,<2; langchain 1.3.18 is installed"),
        ("langgraph", "1.2.10", "chaoskit_langgraph needs langgraph>=1.2.11,<2; langgraph 1.2.10 is installed"),
    ],
)
def test_importing_chaoskit_langgraph_below_the_range_gives_the_documented_message(
    distribution: str, version: str, message: str
) -> None:
    proc = _import_with("chaoskit_langgraph", **{distribution: version})
    assert f"ImportError: {message}" in proc.stdout, proc.stdout + proc.stderr


# --- the internals the compat modules reach, at the installed release ------------------------------------------


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return q


def _wrap(request: object, execute: Callable[[object], object]) -> object:
    return execute(request)


def test_langgraph_compat_reaches_the_toolnode_it_was_given() -> None:
    node = ToolNode([lookup], wrap_tool_call=_wrap, handle_tool_errors="sorry")
    assert lg_compat.tools_of(node) is node.tools_by_name
    assert lg_compat.interceptors(node) == (_wrap, None)
    lg_compat.set_interceptors(node, None, None)
    assert lg_compat.interceptors(node) == (None, None)
    assert lg_compat.handles_errors(node, ValueError("x"))
    assert lg_compat.error_content(node, ValueError("x")) == "sorry"
    assert lg_compat.error_policy_name(node) == "'sorry'"
    assert not lg_compat.handles_errors(ToolNode([lookup], handle_tool_errors=False), ValueError("x"))


def test_langgraph_compat_error_content_is_what_the_toolnode_answers() -> None:
    def boom(request: object, execute: object) -> object:
        raise ValueError("bad")

    node = ToolNode([lookup], wrap_tool_call=boom, handle_tool_errors=True)
    graph = StateGraph(MessagesState)
    graph.add_node("tools", node)
    graph.add_edge(START, "tools")
    call = {"name": "lookup", "args": {"q": "a"}, "id": "c1", "type": "tool_call"}
    out = graph.compile().invoke({"messages": [AIMessage("", tool_calls=[call])]})["messages"][-1]
    assert isinstance(out, ToolMessage)
    assert out.content == lg_compat.error_content(node, ValueError("bad"))


def test_a_toolnode_without_the_internals_is_refused_clearly() -> None:
    node = ToolNode([lookup])
    object.__delattr__(node, "_awrap_tool_call")
    with pytest.raises(
        RuntimeError,
        match=r"supports langgraph-prebuilt>=1\.1,<2: this ToolNode has no "
        r"_awrap_tool_call",
    ):
        lg_compat.interceptors(node)


def test_langchain_compat_finds_the_run_methods_a_subclass_defines() -> None:
    from langchain_core.tools import BaseTool

    class Sync(BaseTool):
        name: str = "sync"
        description: str = "A sync tool."

        def _run(self, q: str) -> str:
            return q

    run, arun = lc_compat.own_run_methods(Sync)
    assert run is Sync._run and arun is None
    assert lc_compat.model_arg_keys(lookup) == frozenset({"q"})


# --- nothing outside the compat modules touches framework internals --------------------------------------------


def test_only_the_compat_modules_touch_framework_internals() -> None:
    found = []
    for path in sorted(INTEGRATIONS.rglob("*.py")):
        if path.name == "_compat.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                parts = node.module.split(".")
                if parts[0] in FRAMEWORKS and (
                    any(p.startswith("_") for p in parts) or any(a.name.startswith("_") for a in node.names)
                ):
                    found.append(f"{where} {ast.unparse(node)}")
            elif isinstance(node, ast.Attribute) and node.attr in FRAMEWORK_PRIVATES:
                found.append(f"{where} {ast.unparse(node)}")
    assert not found, "framework internals belong in the integration's _compat.py:\n" + "\n".join(found)
