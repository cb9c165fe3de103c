"""YAML as arena reads it (configs, manifests, rule files): safe, bounded, and a key given twice is an error.

PyYAML's safe loader keeps the last of two equal keys without a word, so a config that sets ``players`` twice
would silently run with the second value; here it is refused with the key and both lines.

Bounded, because a bot's ``bot.yaml`` comes from an author the league does not trust: a few hundred bytes of
nested aliases (``&a [x,x,...]``, ``&b [*a,*a,...]``, ...) compose to a small graph whose every traversal (a
``repr`` in an error message, a copy) is exponential. Before anything is constructed, the text is refused when it
is longer than ``max_bytes``, and the composed graph when it would count more than ``max_nodes`` nodes with every
alias expanded (counted on the graph, once per node: linear in the text), or nests deeper than ``MAX_DEPTH``.
Every message that shows a value shows a bounded :func:`excerpt` of it.
"""

from __future__ import annotations

import re
import reprlib
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

MAX_BYTES = 1 << 20
"""The longest YAML text read by default (a config; a bot's manifest has a smaller cap, arena.bots.manifest)."""
MAX_NODES = 100_000
"""Nodes (scalars, lists, mappings) of one document, aliases expanded, by default."""
MAX_DEPTH = 200
"""Nesting of lists and mappings; deeper would exhaust the composer's recursion."""
EXCERPT_CHARS = 120

_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 6
_REPR.maxstring = _REPR.maxother = 80


def excerpt(value: object, limit: int = EXCERPT_CHARS) -> str:
    """A ``repr`` of ``value`` for an error message, at most ``limit`` characters whatever ``value`` is (it looks
    at a few items of a few levels only, so an aliased structure of 10**9 leaves costs nothing)."""
    text = _REPR.repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


class DuplicateKeyError(yaml.YAMLError):
    """A mapping that gives one key twice; the message names the key and both lines."""


class TooLargeError(yaml.YAMLError):
    """A document over the size, node or depth limits; the message says which and what the limit is."""


class _UniqueKeyLoader(yaml.SafeLoader):
    max_nodes = MAX_NODES

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise DuplicateKeyError(f"line {key_node.start_mark.line + 1}: the key {excerpt(key)} is given "
                                        f"twice (first on line {seen[key].line + 1}); keep one")
            seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)

    def get_single_data(self) -> Any:
        try:
            node = self.get_single_node()
        except RecursionError:
            raise TooLargeError(f"nested too deeply (at most {MAX_DEPTH} levels of lists and mappings)") from None
        if node is None:
            return None
        _check_size(node, self.max_nodes)
        return self.construct_document(node)


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _check_size(root: Node, max_nodes: int) -> None:
    """Refuse a graph whose expansion (every alias copied out) has more than ``max_nodes`` nodes or is deeper than
    MAX_DEPTH. Without recursion: each node's expanded size is summed from its children's, each counted once."""
    sizes: dict[int, int] = {}
    depth: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            children = _children(node)
            sizes[key] = 1 + sum(sizes[id(child)] for child in children)
            depth[key] = 1 + max((depth[id(child)] for child in children), default=0)
            if sizes[key] > max_nodes:
                raise TooLargeError(f"line {node.start_mark.line + 1}: too many values: more than {max_nodes} "
                                    "once its aliases (*name) are expanded")
            if depth[key] > MAX_DEPTH:
                raise TooLargeError(f"line {node.start_mark.line + 1}: nested too deeply (at most {MAX_DEPTH} "
                                    "levels of lists and mappings)")
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise TooLargeError(f"line {node.start_mark.line + 1}: an alias inside its own anchor (a recursive "
                                "structure)")
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)


_QUOTED = re.compile(r""""(?:[^"\\\n]|\\.)*"|'[^'\n]*'|#[^\n]*""")
_BRACKETS = re.compile(r"[\[\]{}]")


def _flow_depth(text: str) -> int:
    """The deepest nesting of ``[]`` and ``{}`` outside quotes and comments (an over-estimate is harmless: it only
    refuses a text nested deeper than anyone writes)."""
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_QUOTED.sub("", text)):
        depth = depth + 1 if bracket in "[{" else max(0, depth - 1)
        deepest = max(deepest, depth)
    return deepest


def load_yaml(text: str, *, max_bytes: int = MAX_BYTES, max_nodes: int = MAX_NODES) -> Any:
    """Parse one YAML document safely; raises ``yaml.YAMLError`` (naming the line) for a key given twice, and
    :class:`TooLargeError` for a text over ``max_bytes`` (UTF-8) or a document over ``max_nodes`` nodes once its
    aliases are expanded.

    >>> load_yaml("a: &x [1, 2]\\nb: *x")
    {'a': [1, 2], 'b': [1, 2]}
    >>> load_yaml("a: &x [1, 2, 3]\\nb: [*x, *x, *x]", max_nodes=10)
    Traceback (most recent call last):
    ...
    arena.yamlfile.TooLargeError: line 2: too many values: more than 10 once its aliases (*name) are expanded
    """
    size = len(text.encode("utf-8", errors="replace"))
    if size > max_bytes:
        raise TooLargeError(f"too long: {size} bytes (at most {max_bytes})")
    if _flow_depth(text) > MAX_DEPTH:
        # Before PyYAML's scanner, whose cost grows with the text times the depth of unclosed brackets.
        raise TooLargeError(f"nested too deeply (at most {MAX_DEPTH} levels of lists and mappings)")
    loader = _UniqueKeyLoader(text)
    loader.max_nodes = max_nodes
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
