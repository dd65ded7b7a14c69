"""Round-trip editing of YAML text with ruamel.yaml: comments, key order, quoting and indentation
of the untouched parts are kept. Shared by the Accelerate and Axolotl writers.

API::

    edit = yaml_write.load(text)          # raises YamlEditError when ruamel cannot parse it
    edit.get("/fsdp_config/fsdp_version") # a JSON pointer (or a tuple of keys); MISSING when absent
    edit.set("/fsdp_config/fsdp_version", 2)     # creates the missing parent mappings
    edit.set("/mixed_precision", "no")    # strings PyYAML would read as something else are quoted
    edit.rename("/fsdp_config/fsdp_sharding_strategy", "fsdp_reshard_after_forward", value=True)
    edit.delete("/fsdp_config/fsdp_use_orig_params")   # the comment lines after it stay (they
                                                       # belong to the next key)
    edit.comment("/fsdp_config/fsdp_version", "set by shardshift")   # end-of-line comment
    text = edit.dump()                    # the original text verbatim when nothing was changed

`new(data)` starts an empty document (block style, 2-space indentation).

Values written are read back the way PyYAML's `yaml.safe_load` (YAML 1.1) reads them: a string
such as `no`, `on`, `1e-5` or `010` is single-quoted so that it stays a string. ruamel.yaml is
imported lazily.
"""

from __future__ import annotations

import io
import re
from typing import Any

from shardshift.source import MISSING, split_pointer

__all__ = ["Edit", "YamlEditError", "load", "new", "needs_quotes"]


class YamlEditError(Exception):
    """The text cannot be edited round-trip (not YAML ruamel.yaml reads, or not a mapping)."""


def _yaml():
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096
    yaml.allow_duplicate_keys = True  # PyYAML accepts them (the last wins); untouched text stays verbatim
    return yaml


def needs_quotes(text: str) -> bool:
    """A plain scalar `text` would not be the string `text` to PyYAML's YAML 1.1 resolver."""
    from shardshift.yaml11 import IMPLICIT

    if any(pattern.match(text) for _, pattern in IMPLICIT):
        return True
    # what ruamel's YAML 1.2 resolver reads as non-strings, or characters needing quotes anyway
    return bool(re.match(r"^[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?$", text)) \
        or text != text.strip() or text[:1] in "!&*[]{}>|%@`'\"#,?:-" or ": " in text or " #" in text


# line breaks other than \n (NEL, LS, PS, CR) and control characters
_BREAKS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def _scalar(value: Any) -> Any:
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString, SingleQuotedScalarString

    if isinstance(value, str) and _BREAKS.search(value):
        return DoubleQuotedScalarString(value)  # escaped: plain or single-quoted, a loader folds them
    if isinstance(value, str) and needs_quotes(value):
        return SingleQuotedScalarString(value)
    if isinstance(value, dict):
        from ruamel.yaml.comments import CommentedMap

        out = CommentedMap()
        for key, item in value.items():
            out[_key(key)] = _scalar(item)
        return out
    if isinstance(value, list):
        from ruamel.yaml.comments import CommentedSeq

        return CommentedSeq(_scalar(item) for item in value)
    return value


def _key(key: Any) -> Any:
    """A new mapping key, quoted when PyYAML would read it as something else (`no:` is a bool key)."""
    from ruamel.yaml.scalarstring import SingleQuotedScalarString

    return SingleQuotedScalarString(key) if isinstance(key, str) and needs_quotes(key) else key


def _indentation(text: str) -> tuple[int, int, int]:
    """(mapping, sequence, offset) indentation as the text uses it; ruamel's (2, 2, 0) else."""
    mapping = 2
    sequence, offset = 2, 0
    lines = text.splitlines()
    for previous, line in zip(lines, lines[1:]):
        stripped = line.lstrip(" ")
        if not stripped or stripped.startswith("#"):
            continue
        before = previous.rstrip()
        if before.endswith(":") and not previous.lstrip().startswith("#"):
            step = len(line) - len(stripped) - (len(previous) - len(previous.lstrip(" ")))
            if step > 0:
                if stripped.startswith("- "):
                    offset = step
                    sequence = step + 2
                else:
                    mapping = step
    return mapping, max(sequence, offset + 2), offset


class Edit:
    """A YAML document open for round-trip edits."""

    def __init__(self, text: str, data: Any) -> None:
        self.text = text
        self.data = data
        self.changed = False

    # -- reading ----------------------------------------------------------------------------
    @staticmethod
    def _keys(path: str | tuple | list) -> list[Any]:
        if isinstance(path, str):
            return list(split_pointer(path)) if path else []
        return list(path)

    def get(self, path: str | tuple | list) -> Any:
        node = self.data
        for key in self._keys(path):
            if isinstance(node, dict) and key in node:
                node = node[key]
            elif isinstance(node, list) and isinstance(key, (int, str)) and str(key).isdigit() \
                    and int(key) < len(node):
                node = node[int(key)]
            else:
                return MISSING
        return node

    def has(self, path: str | tuple | list) -> bool:
        return self.get(path) is not MISSING

    # -- editing ----------------------------------------------------------------------------
    def _parent(self, keys: list[Any], create: bool) -> Any:
        from ruamel.yaml.comments import CommentedMap

        node = self.data
        for key in keys[:-1]:
            if isinstance(node, dict):
                if key not in node or not isinstance(node[key], (dict, list)):
                    if not create:
                        return None
                    node[key] = CommentedMap()
                node = node[key]
            elif isinstance(node, list) and str(key).isdigit() and int(key) < len(node):
                node = node[int(key)]
            else:
                return None
        return node

    def set(self, path: str | tuple | list, value: Any) -> None:
        """Set the value at `path` (creating parent mappings); an existing key keeps its place,
        its comments and, when the new value is the same kind of string, its quoting."""
        keys = self._keys(path)
        if not keys:
            raise YamlEditError("cannot replace the whole document")
        parent = self._parent(keys, create=True)
        if parent is None:
            raise YamlEditError(f"no mapping at {path!r}")
        key = keys[-1]
        new = _scalar(value)
        if isinstance(parent, list):
            index = int(key)
            if parent[index] == value and type(parent[index]) is type(value):
                return
            parent[index] = new
        else:
            old = parent.get(key, MISSING)
            if old is not MISSING and _same(old, value):
                return
            if old is not MISSING and isinstance(old, str) and isinstance(value, str) \
                    and type(old) is not str and not needs_quotes(value):
                new = type(old)(value)  # keep the quoting style of the value it replaces
            parent[key if old is not MISSING else _key(key)] = new
        self.changed = True

    def delete(self, path: str | tuple | list) -> bool:
        """Remove the key at `path`; False when it is not there. An emptied parent mapping stays."""
        keys = self._keys(path)
        parent = self._parent(keys, create=False)
        if isinstance(parent, dict) and keys and keys[-1] in parent:
            _keep_comment_of(parent, keys[-1])
            del parent[keys[-1]]
            self.changed = True
            return True
        return False

    def rename(self, path: str | tuple | list, new_key: str, value: Any = MISSING) -> bool:
        """Give the key at `path` a new name in the same place (and optionally a new value)."""
        keys = self._keys(path)
        parent = self._parent(keys, create=False)
        if not isinstance(parent, dict) or keys[-1] not in parent:
            return False
        old_key = keys[-1]
        position = list(parent.keys()).index(old_key)
        old = parent[old_key]
        comment = parent.ca.items.pop(old_key, None)
        del parent[old_key]
        if new_key in parent:
            del parent[new_key]
            position = min(position, len(parent))
        parent.insert(position, new_key, old if value is MISSING else _scalar(value))
        if comment is not None:
            parent.ca.items[new_key] = comment
        self.changed = True
        return True

    def comment(self, path: str | tuple | list, text: str) -> None:
        """Put `# text` at the end of the line of the key at `path`."""
        keys = self._keys(path)
        parent = self._parent(keys, create=False)
        if isinstance(parent, dict) and keys[-1] in parent:
            parent.yaml_add_eol_comment(text, keys[-1])
            self.changed = True

    def dump(self) -> str:
        if not self.changed:
            return self.text
        yaml = _yaml()
        mapping, sequence, offset = _indentation(self.text)
        yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
        stream = io.StringIO()
        yaml.dump(self.data, stream)
        out = stream.getvalue()
        if self.text and not self.text.endswith("\n"):
            out = out.rstrip("\n")
        if self.text.startswith("---") and not out.startswith("---"):
            out = "---\n" + out
        return out


def _same(old: Any, value: Any) -> bool:
    if isinstance(old, bool) or isinstance(value, bool):
        return type(old) is type(value) and old == value
    if isinstance(old, (dict, list)) or isinstance(value, (dict, list)):
        return False
    return isinstance(old, type(value)) and old == value or \
        (isinstance(old, str) and isinstance(value, str) and str(old) == value)


def _keep_comment_of(parent: Any, key: Any) -> None:
    """A comment attached after `key`'s value (the lines before the next key) moves to the
    key before it, so that deleting a key does not delete the next key's leading comment."""
    items = getattr(parent, "ca", None)
    if items is None or key not in items.items:
        return
    token = items.items[key][2] if len(items.items[key]) > 2 else None
    if token is None:
        return
    keys = list(parent.keys())
    index = keys.index(key)
    text = token.value
    # keep only full-line comments (drop the end-of-line comment of the deleted key)
    lines = text.split("\n", 1)
    rest = lines[1] if len(lines) > 1 else ""
    if not rest.strip():
        return
    if index > 0:
        prev = keys[index - 1]
        entry = items.items.setdefault(prev, [None, None, None, None])
        from ruamel.yaml.error import CommentMark
        from ruamel.yaml.tokens import CommentToken

        old = entry[2].value if entry[2] is not None else "\n"
        entry[2] = CommentToken(old if old.endswith("\n") else old + "\n", CommentMark(0), None)
        entry[2].value = old + rest if old.endswith("\n") else old + "\n" + rest


def load(text: str) -> Edit:
    """Open `text` for edits; YamlEditError when it is not a YAML mapping ruamel.yaml reads."""
    from ruamel.yaml.error import YAMLError

    try:
        data = _yaml().load(text)
    except (YAMLError, Exception) as error:  # ruamel raises a few unmarked errors too
        raise YamlEditError(str(error).splitlines()[0] if str(error) else type(error).__name__) from None
    if data is None:
        from ruamel.yaml.comments import CommentedMap

        data = CommentedMap()
    if not isinstance(data, dict):
        raise YamlEditError("not a YAML mapping")
    return Edit(text, data)


def new(data: dict | None = None) -> Edit:
    """An empty document (or one holding `data`), written in block style."""
    edit = load("")
    for key, value in (data or {}).items():
        edit.set((key,), value)
    edit.changed = True
    return edit
