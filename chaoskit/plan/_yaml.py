"""Reading plan and scenario YAML safely: bounded size, depth and alias expansion, with line numbers."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from chaoskit._errors import PlanError

__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_NODES", "load_yaml", "read_source"]

#: the largest plan or scenario text read (bytes); real files are a few kilobytes
MAX_BYTES = 1_000_000
#: the deepest nesting of mappings and lists; real payloads nest a handful of levels
MAX_DEPTH = 100
#: the most values a document may hold once every alias is expanded (a "billion laughs" bomb holds 10^9)
MAX_NODES = 100_000

_LOOKS_LIKE_YAML = re.compile(r"^\s*[\w.-]+\s*:(\s|$)")
_ALLOWED_SOURCES = "a YAML file path (str or os.PathLike) or YAML text (str or UTF-8 bytes)"


def read_source(path_or_text: object, source: str | None) -> tuple[str, str]:
    """The text of a plan and the name to report it by, from a path or from YAML text.

    A string is text when it has a newline, starts like a flow mapping/sequence or a comment, or reads as
    ``key: value``; else it is a path (an existing file always is). Bytes are YAML text in UTF-8.
    """
    if isinstance(path_or_text, bytes | bytearray | memoryview):
        try:
            text = bytes(path_or_text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PlanError(
                f"the bytes given are not UTF-8 text ({exc.reason} at byte {exc.start}); expected {_ALLOWED_SOURCES}",
                source=source or "<yaml>",
            ) from None
        if not text.strip():
            raise PlanError(
                f"no plan given: the bytes are empty; expected {_ALLOWED_SOURCES}", source=source or "<yaml>"
            )
        return _bounded(text, source or "<yaml>"), source or "<yaml>"
    if isinstance(path_or_text, os.PathLike):
        raw = os.fspath(path_or_text)
        if not isinstance(raw, str):
            raw = os.fsdecode(raw)
        return _read_file(Path(raw), source)
    if not isinstance(path_or_text, str):
        raise PlanError(
            f"expected {_ALLOWED_SOURCES}, got {type(path_or_text).__name__} {path_or_text!r:.80}",
            source=source or "<python>",
        )
    text = path_or_text
    if not text.strip():
        raise PlanError(f"no plan given: the string is empty; expected {_ALLOWED_SOURCES}", source=source or "<yaml>")
    if "\n" in text or text.lstrip().startswith(("{", "[", "#")):
        return _bounded(text, source or "<yaml>"), source or "<yaml>"
    if "\x00" not in text:
        path = Path(text)
        try:
            exists = path.is_file() or path.is_dir()
        except (OSError, ValueError):  # a name too long for the file system is no file
            exists = False
        if exists:
            return _read_file(path, source)
    if _LOOKS_LIKE_YAML.match(text):
        return _bounded(text, source or "<yaml>"), source or "<yaml>"
    raise PlanError(f"file not found (expected {_ALLOWED_SOURCES})", source=text[:200])


def _bounded(text: str, source: str) -> str:
    if len(text) > MAX_BYTES:
        raise PlanError(
            f"is {len(text):,} characters long; plans and scenarios are limited to {MAX_BYTES:,}", source=source
        )
    return text


def _read_file(path: Path, source: str | None) -> tuple[str, str]:
    name = str(path)
    if path.is_dir():
        raise PlanError("is a folder; expected a YAML file", source=name)
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise PlanError(
                f"is {size:,} bytes long; plans and scenarios are limited to {MAX_BYTES:,} bytes", source=name
            )
        data = path.read_bytes()
    except FileNotFoundError:
        raise PlanError("file not found (expected a YAML file)", source=name) from None
    except OSError as exc:
        raise PlanError(
            f"cannot read the file ({exc.strerror or exc}); expected a readable YAML file", source=name
        ) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PlanError(
            f"is not UTF-8 text (byte {exc.start}: {exc.reason}); expected a YAML text file", source=name
        ) from None
    return _bounded(text, source or name), source or name


class _Limits(yaml.YAMLError):
    """A document beyond the size limits; carries the line where the limit was crossed."""

    def __init__(self, message: str, line: int | None, path: list[Any]) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.field = _format(path)


def _format(path: list[Any]) -> str | None:
    parts = [p for p in path if p is not None]
    out = ""
    for part in parts[:6]:  # where the oversized value starts; its 100th level says nothing more
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + str(part)
    return (out + ("..." if len(parts) > 6 else "")) or None


def _step(index: Any) -> Any:
    # the composer passes a mapping value its key node, a list item its position, a key None
    if isinstance(index, yaml.ScalarNode):
        return index.value
    return index if isinstance(index, int) else None


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (plain YAML keeps the last one, silently),
    nesting deeper than MAX_DEPTH (the composer recurses) and documents that expand past MAX_NODES."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._nodes = 0
        self._path: list[Any] = []

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        self._depth += 1
        self._nodes += 1
        if self._depth > MAX_DEPTH or self._nodes > MAX_NODES:
            peek: Callable[[], Any] = self.peek_event  # PyYAML's stubs leave this method untyped
            line = peek().start_mark.line + 1
            if self._depth > MAX_DEPTH:
                raise _Limits(
                    f"nested more than {MAX_DEPTH} levels deep (mappings and lists); flatten the data", line, self._path
                )
            raise _Limits(
                f"holds more than {MAX_NODES:,} values; plans and scenarios are limited to that", line, self._path
            )
        self._path.append(_step(index))
        try:
            return super().compose_node(parent, index)
        finally:
            self._path.pop()
            self._depth -= 1

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        # an explicit tag on a value that does not fit it ("!!int seed", "!!float x") makes PyYAML's own
        # constructors raise plain Python errors; they become YAML errors at that value's line
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, TypeError, IndexError, KeyError, OverflowError, AttributeError) as exc:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"the value {node.value!r:.60} does not fit its tag {node.tag!r} ({exc}); remove the "
                "tag or fix the value",
                node.start_mark,
            ) from None

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = key_node.value
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"key {key!r} is given twice (first on line {seen[key]}); give it once",
                    key_node.start_mark,
                )
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


def _expanded_size(root: yaml.Node) -> None:
    """Count the values the document holds with aliases expanded, without expanding them: an alias bomb is
    a few hundred nodes that reference each other, so sizes are summed per node, once (memoised)."""
    sizes: dict[int, int] = {}
    depth_of: dict[int, int] = {}
    on_path: set[int] = set()
    where: list[Any] = []

    def size(node: yaml.Node, depth: int) -> int:
        key = id(node)
        if key in on_path:
            raise _Limits(
                "an alias refers to a mapping or list that contains it (a cycle); "
                "aliases may only repeat finished values",
                node.start_mark.line + 1,
                where,
            )
        if key in sizes and depth_of[key] >= depth:
            return sizes[key]
        if depth > MAX_DEPTH:
            raise _Limits(
                f"nested more than {MAX_DEPTH} levels deep once aliases are expanded; flatten the data",
                node.start_mark.line + 1,
                where,
            )
        total = 1
        children: list[tuple[Any, yaml.Node]] = []
        if isinstance(node, yaml.MappingNode):
            _no_duplicates(node, where)
            for k, v in node.value:
                children.extend(((None, k), (_step(k), v)))
        elif isinstance(node, yaml.SequenceNode):
            children = list(enumerate(node.value))
        on_path.add(key)
        try:
            for step, child in children:
                where.append(step)
                total += size(child, depth + 1)
                where.pop()
                if total > MAX_NODES:
                    raise _Limits(
                        f"holds more than {MAX_NODES:,} values once its aliases (*name) are expanded; "
                        f"plans and scenarios are limited to that",
                        node.start_mark.line + 1,
                        where,
                    )
        finally:
            on_path.discard(key)
        sizes[key] = total
        depth_of[key] = depth
        return total

    size(root, 1)


def _no_duplicates(node: yaml.MappingNode, where: list[Any]) -> None:
    """Refuse a key given twice in one mapping: plain YAML keeps the last one, silently."""
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
            continue
        line = key_node.start_mark.line + 1
        if key_node.value in seen:
            raise _Limits(
                f"key {key_node.value!r} is given twice (first on line {seen[key_node.value]}); give it once",
                line,
                [*where, key_node.value],
            )
        seen[key_node.value] = line


def _hint(problem: str) -> str:
    if "'\\t'" in problem or "\\t" in problem:
        return " (indent with spaces: YAML does not allow tabs for indentation)"
    if "unacceptable character" in problem:
        return " (control characters are not allowed in YAML text; is this a binary file?)"
    if "another document" in problem or "expected a single document" in problem:
        return " (one plan or scenario per file: remove the extra '---' document)"
    return ""


def load_yaml(text: str, source: str) -> tuple[Any, dict[tuple[Any, ...], int]]:
    """Parse YAML safely; return the data and a map from key paths to 1-based line numbers."""
    try:
        loader = _StrictLoader(text)  # the reader refuses control characters already here
    except yaml.reader.ReaderError as exc:
        at = exc.position or 0
        raise PlanError(
            f"malformed YAML: {exc.reason} at character {at + 1}{_hint(str(exc))}",
            source=source,
            line=text.count("\n", 0, at) + 1,
        ) from None
    try:
        node = loader.get_single_node()
        if node is not None:
            _expanded_size(node)
        data = loader.construct_document(node) if node is not None else None
    except _Limits as exc:
        raise PlanError(exc.message, source=source, line=exc.line, field=exc.field) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or str(exc)
        raise PlanError(f"malformed YAML: {problem}{_hint(problem)}", source=source, line=line) from None
    except yaml.YAMLError as exc:
        raise PlanError(f"malformed YAML: {exc}", source=source) from None
    except RecursionError:  # the limits above should make this unreachable; never show the traceback
        raise PlanError(f"nested too deeply (more than {MAX_DEPTH} levels); flatten the data", source=source) from None
    finally:
        loader.dispose()
    lines: dict[tuple[Any, ...], int] = {}
    if node is not None:
        _walk(node, (), lines)
    return data, lines


def _walk(node: yaml.Node, path: tuple[Any, ...], out: dict[tuple[Any, ...], int]) -> None:
    out.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            k = key.value if isinstance(key, yaml.ScalarNode) else f"<{key.tag}>"
            out[(*path, k)] = key.start_mark.line + 1
            _walk(value, (*path, k), out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, (*path, i), out)
