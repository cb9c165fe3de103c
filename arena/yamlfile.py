"""YAML as arena reads it (configs, manifests, rule files): safe, and a key given twice is an error.

PyYAML's safe loader keeps the last of two equal keys without a word, so a config that sets ``players`` twice
would silently run with the second value; here it is refused with the key and both lines.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode


class DuplicateKeyError(yaml.YAMLError):
    """A mapping that gives one key twice; the message names the key and both lines."""


class _UniqueKeyLoader(yaml.SafeLoader):
    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise DuplicateKeyError(f"line {key_node.start_mark.line + 1}: the key {key!r} is given twice "
                                        f"(first on line {seen[key].line + 1}); keep one")
            seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str) -> Any:
    """Parse one YAML document safely; raises ``yaml.YAMLError`` (naming the line) for a key given twice."""
    return yaml.load(text, Loader=_UniqueKeyLoader)
