"""`check --fix` / `--diff`: apply the fixes rules marked safe, by editing the source text.

A rule opts in by giving a finding a `fix` and a `fix_kind`:

- "rename-key": `fix` is the new name of the key at the finding's pointer (same object);
- "replace-value": `fix` is the new value, as source text, for the scalar at the pointer.

The engine finds the token of that key or value in the file's positioned tree (positions the
parser recorded), checks that the text there is what the tree says, and replaces only those
characters: formatting, comments and key order stay as they were. It re-reads the edited text
and checks again, so fixes that a first fix uncovers (keys inside a renamed section) are made
too, up to a few rounds. An edit whose result no longer parses is dropped. Nothing is written
here: the caller writes the files (--fix) or prints a diff (--diff).
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from dataclasses import dataclass, field
from typing import Callable

from shardshift import files
from shardshift.document import Document
from shardshift.rules.base import Context, Finding
from shardshift.source import Member, Node, find_member, find_node, join_pointer, split_pointer

MAX_ROUNDS = 8
PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_\-.]*\Z")


@dataclass(slots=True)
class Edit:
    start: int
    end: int
    replacement: str
    finding: Finding


@dataclass(slots=True)
class FixOutcome:
    """Per changed file: (text before, text after). `fixed`: the findings whose fix was applied;
    `findings`: what a check of the fixed text reports (what remains)."""

    changed: dict[str, tuple[str, str]] = field(default_factory=dict)
    fixed: list[Finding] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    documents: list[Document] = field(default_factory=list)


def _line_starts(text: str) -> list[int]:
    return [0, *(m.end() for m in re.finditer("\n", text))]


def _offset(starts: list[int], line: int, column: int) -> int | None:
    if not 1 <= line <= len(starts):
        return None
    return starts[line - 1] + column - 1


def _quoted_end(text: str, start: int) -> int | None:
    """The offset after the closing quote of the string token that opens at `start`."""
    quote = text[start]
    index = start + 1
    while index < len(text):
        c = text[index]
        if c == "\\":
            index += 2
            continue
        if c == quote:
            return index + 1
        if c == "\n":
            return None
        index += 1
    return None


def _key_span(text: str, starts: list[int], member: Member) -> tuple[int, int] | None:
    start = _offset(starts, member.line, member.column)
    if start is None or start >= len(text):
        return None
    if text[start] in "\"'":
        end = _quoted_end(text, start)
        if end is None:
            return None
        token = text[start:end]
        try:
            name = json.loads(token) if token[0] == '"' else token[1:-1].replace("''", "'")
        except ValueError:
            return None
        return (start, end) if name == member.key else None
    end = start + len(member.key)
    return (start, end) if text[start:end] == member.key else None


def _value_span(text: str, starts: list[int], node: Node) -> tuple[int, int] | None:
    if node.kind in ("object", "array") or not node.raw:
        return None
    start = _offset(starts, node.line, node.column)
    if start is None:
        return None
    end = start + len(node.raw)
    return (start, end) if text[start:end] == node.raw else None


def _key_text(text: str, start: int, name: str) -> str:
    """The new key written the way the old one was: quoted with the same quote, or plain."""
    quote = text[start]
    if quote == '"':
        return json.dumps(name, ensure_ascii=False)
    if quote == "'":
        return "'" + name.replace("'", "''") + "'"
    return name if PLAIN_KEY.match(name) else json.dumps(name, ensure_ascii=False)


def plan_edits(document: Document, findings: list[Finding]) -> tuple[list[Edit], list[tuple[Finding, str]]]:
    """The edits for the fixable findings of one document, and the ones that could not be made
    (with the reason). Overlapping edits: the first wins, the rest wait for the next round."""
    edits: list[Edit] = []
    skipped: list[tuple[Finding, str]] = []
    root, text = document.root, document.text
    if root is None:
        return [], [(f, "the file has no positioned tree") for f in findings]
    starts = _line_starts(text)
    for finding in findings:
        pointer = finding.pointer
        if pointer is None or not pointer:
            skipped.append((finding, "no pointer to edit"))
            continue
        *parents, name = split_pointer(pointer)
        parent = find_node(root, "".join(join_pointer("", token) for token in parents))
        if parent is None or parent.kind != "object":
            skipped.append((finding, "the key is not in an object"))
            continue
        if sum(m.key == name for m in parent.members) != 1:
            skipped.append((finding, f"the key {name!r} appears more than once"))
            continue
        if finding.fix_kind == "rename-key":
            new = finding.fix or ""
            if not new or any(m.key == new for m in parent.members):
                skipped.append((finding, f"the object already has a key {new!r}"))
                continue
            member = find_member(root, pointer)
            span = _key_span(text, starts, member) if member else None
            replacement = _key_text(text, span[0], new) if span else ""
        elif finding.fix_kind == "replace-value":
            node = find_node(root, pointer)
            span = _value_span(text, starts, node) if node else None
            replacement = finding.fix or ""
        else:
            skipped.append((finding, f"unknown fix kind {finding.fix_kind!r}"))
            continue
        if span is None:
            skipped.append((finding, "the source text at the recorded position does not match"))
            continue
        if any(e.start < span[1] and span[0] < e.end for e in edits):
            continue  # overlaps an edit of this round; retried on the re-read text
        edits.append(Edit(span[0], span[1], replacement, finding))
    return edits, skipped


def apply_edits(text: str, edits: list[Edit]) -> str:
    for edit in sorted(edits, key=lambda e: e.start, reverse=True):
        text = text[:edit.start] + edit.replacement + text[edit.end:]
    return text


def fix_documents(documents: list[Document], context: Context,
                  check: Callable[[list[Document]], list[Finding]]) -> FixOutcome:
    """Apply every safe fix among the findings of `check(documents)`, re-reading and
    re-checking after each round. `check` is the configured check (rules, ignores,
    suppressions), so a suppressed or ignored finding is never fixed."""
    from shardshift import formats

    outcome = FixOutcome()
    documents = list(documents)
    original = {d.path: d.text for d in documents}
    findings = check(documents)
    for _ in range(MAX_ROUNDS):
        fixable = [f for f in findings if f.fix_kind is not None and f.fix is not None]
        progressed = False
        for index, document in enumerate(documents):
            if document.syntax is not None:
                continue
            mine = [f for f in fixable if f.file == document.path]
            if not mine:
                continue
            edits, _ = plan_edits(document, mine)
            if not edits:
                continue
            text = apply_edits(document.text, edits)
            if text == document.text:
                continue
            fixed = formats.reader(document.format).read(text, document.path)
            if fixed.syntax is not None:
                continue  # never make a file unreadable
            documents[index] = fixed
            outcome.fixed.extend(e.finding for e in edits)
            progressed = True
        if not progressed:
            break
        findings = check(documents)
    outcome.findings = findings
    outcome.documents = documents
    for document in documents:
        if document.text != original[document.path]:
            outcome.changed[document.path] = (original[document.path], document.text)
    return outcome


def unified_diff(path: str, before: str, after: str) -> str:
    import difflib

    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                 fromfile=f"a/{path}", tofile=f"b/{path}")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


TEMP_SUFFIX = ".shardshift-fix"


def write(path: str, text: str, before: str, roots: list[str], *, follow_links: bool = False) -> str | None:
    """Write `text` over `path` as an editor saves: into a temporary file beside it, flushed to
    disk, then renamed over it in one step, so that a failure at any point leaves the original as
    it was. Returns None when written, else why not (nothing was changed then):

    - the file changed since it was read (`before`, an editor's save): the save is kept;
    - it is a symbolic link, or has other hard links (a rename would cut them), unless
      `follow_links` (then a link is written at its target, the links of a multiply-linked file
      are kept by writing its bytes in place, after the new text is safely on disk);
    - it lies, or its link points, outside the checked `roots`.

    A UTF-8 byte-order mark and the line endings are kept; so is the file's mode."""
    try:
        info = os.lstat(path)
    except OSError as error:
        return f"cannot read it again: {error.strerror}"
    target = path
    if stat.S_ISLNK(info.st_mode):
        if not follow_links:
            return "it is a symbolic link; not written through (--fix-links writes at its target)"
        target = os.path.realpath(path)
        try:
            info = os.stat(target)
        except OSError as error:
            return f"its link target cannot be read: {error.strerror}"
    if not files.inside(target, roots):
        return "it lies outside the checked tree"
    if not stat.S_ISREG(info.st_mode):
        return "it is not a regular file"
    in_place = info.st_nlink > 1
    if in_place and not follow_links:
        return f"it has {info.st_nlink - 1} other hard link(s); not written (--fix-links writes it in place)"
    current = files.read_bytes(target)
    if current is None or _decoded(current) != before:
        return "it changed since it was read (saved by another program?); run again"
    data = (b"\xef\xbb\xbf" if current.startswith(b"\xef\xbb\xbf") else b"") + text.encode("utf-8")
    directory, name = os.path.split(os.path.abspath(target))
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=TEMP_SUFFIX, dir=directory)
    except OSError as error:
        return f"cannot write the fixes: {error.strerror}"
    try:
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
                stream.flush()
                os.fsync(stream.fileno())
            os.chmod(temporary, stat.S_IMODE(info.st_mode))
            # the last look: a save made while the fixes were computed wins over them
            again = files.read_bytes(target)
            if again != current:
                return "it changed since it was read (saved by another program?); run again"
            if in_place:  # the new text is on disk beside it; now rewrite the shared inode's bytes
                try:
                    _overwrite(target, data)
                except OSError:
                    _overwrite(target, current)  # put the original back; if even that fails, say so
                    raise
            else:
                os.replace(temporary, target)
                temporary = ""
                _sync_directory(directory)
        finally:
            if temporary:
                try:
                    os.unlink(temporary)
                except OSError:
                    pass
    except OSError as error:
        return f"cannot write the fixes: {error.strerror or error}"
    return None


def _overwrite(path: str, data: bytes) -> None:
    with open(path, "r+b") as stream:
        stream.write(data)
        stream.truncate()
        stream.flush()
        os.fsync(stream.fileno())


def _decoded(raw: bytes) -> str | None:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


def _sync_directory(directory: str) -> None:
    """Make the rename itself durable (where the platform allows opening a folder)."""
    try:
        handle = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)
