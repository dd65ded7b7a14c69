"""`shardshift lsp`: the language server (pygls), over stdio.

What an editor shows is what `shardshift check <workspace>` reports. A check runs on open, on save,
~300 ms after the last keystroke, and when a file of the setup changes on disk; it covers the opened
file's setup, not the workspace: the file, the files it names (its ds_config) and the files of the
workspace that name it, transitively (a launch script -> its Accelerate YAML -> the ds_config),
each read from the editor's unsaved text when it is open (`shardshift.check.OVERLAY`), else from
disk; the workspace is the tree checked (`Context.roots`: release pins and a ds_config's readers
are looked for up to its top). The options are those of the workspace's `[tool.shardshift]` (or
shardshift.toml). Every file of the setup gets its findings published (and cleared when they
disappear); a finding whose related place is in another file of the setup is shown there too.
Checks run one at a time in a worker thread (the check's caches are not shared between threads);
a check of an older version of a file than the editor now holds is never published.
bench/lsp_scope.py compares each file's findings with those of a check of the whole folder.

Quick fixes are the safe fixes of `check --fix` (shardshift.fix), as edits of the editor's text;
hover and completion come from `shardshift.lsp.knowledge`. A handler that fails logs the error
(window/logMessage) and answers empty: the server never stops on a file.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import re
import stat
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.uris import from_fs_path, to_fs_path

DEBOUNCE_SECONDS = 0.3
SOURCE = "shardshift"
FIX_ALL_TITLE = "Fix all safe shardshift findings"
SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning,
            "info": types.DiagnosticSeverity.Information}
# Files read to find those that name the opened one (as DS420's consumer scan reads them)
SCAN_SUFFIXES = (".sh", ".bash", ".slurm", ".sbatch", ".py", ".yaml", ".yml", ".json", ".jsonc", ".hjson", ".toml",
                 ".txt", ".cfg")
SCAN_MAX_BYTES = 1_000_000
SCOPE_DEPTH = 3  # how far references are followed from the opened file


@functools.lru_cache(maxsize=None)
def rule_url(code: str, base: str | None = None) -> str:
    """The rule's page on the documentation site: under the workspace's `docs-url` when it sets
    one, else the package's documentation URL (never the server's own current directory)."""
    from shardshift.docs_url import fallback_url
    from shardshift.docs_url import rule_url as page

    return page(code, base=base or fallback_url())


# -- positions: findings count code points from 1; LSP counts the negotiated units from 0 ----------

def units(text: str, encoding: str) -> int:
    """The length of `text` in the client's units (utf-8 bytes, utf-16 code units, code points)."""
    if encoding == types.PositionEncodingKind.Utf32:
        return len(text)
    if encoding == types.PositionEncodingKind.Utf8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


def to_client(lines: list[str], line: int, character: int, encoding: str) -> types.Position:
    """0-based (line, code point) -> an LSP Position in `encoding` (past the end: the end)."""
    if not lines:
        return types.Position(line=0, character=0)
    if line >= len(lines):
        return types.Position(line=len(lines) - 1, character=units(lines[-1], encoding))
    return types.Position(line=line, character=units(lines[line][:max(character, 0)], encoding))


def from_client(lines: list[str], position: types.Position, encoding: str) -> tuple[int, int]:
    """An LSP Position -> 0-based (line, code point)."""
    if position.line >= len(lines):
        return len(lines), 0
    text, counted = lines[position.line], 0
    for index, char in enumerate(text):
        if counted >= position.character:
            return position.line, index
        counted += units(char, encoding)
    return position.line, len(text)


def split_lines(text: str) -> list[str]:
    """Lines without their ends, as LSP counts them (\\r\\n, \\r and \\n end a line)."""
    return re.split(r"\r\n|\r|\n", text)


_TOKEN_END = re.compile(r"[^\s,:;{}\[\]=]+")


def token_range(lines: list[str], line: int, column: int, encoding: str) -> types.Range:
    """The range of the token at 1-based (line, column): a quoted string, a flag or a word."""
    row, start = max(line - 1, 0), max(column - 1, 0)
    text = lines[row] if row < len(lines) else ""
    end = start
    if start < len(text):
        if text[start] in "\"'":
            close = text.find(text[start], start + 1)
            while close > 0 and text[close - 1] == "\\" and text[start] == '"':
                close = text.find(text[start], close + 1)
            end = close + 1 if close > 0 else len(text)
        else:
            match = _TOKEN_END.match(text, start)
            end = match.end() if match else start + 1
    return types.Range(start=to_client(lines, row, start, encoding), end=to_client(lines, row, end, encoding))


# -- what a finding looks like in the editor ------------------------------------------------------------

def message_of(finding) -> str:
    """The finding as the text reporter gives it: the message, the pointer, the fix, what is unknown."""
    text = finding.message + (f" [{finding.pointer}]" if finding.pointer else "")
    if finding.fix is not None:
        text += f"\nfix: {finding.fix}"
    if finding.unknown_context is not None:
        u = finding.unknown_context
        text += f"\nunknown {u.kind}: {u.what}; {u.how}"
    return text


def finding_data(finding, mirror: bool = False) -> dict:
    return {"file": finding.file, "line": finding.line, "column": finding.column, "pointer": finding.pointer,
            "message": finding.message, "fix": finding.fix, "fix_kind": finding.fix_kind, "mirror": mirror,
            "severity": finding.severity, "code": finding.code}


@dataclass
class Workspace:
    """What the server keeps between requests (touched only in the worker thread, except `texts`)."""

    root: str | None = None
    published: dict[str, set[str]] = field(default_factory=dict)  # checked file -> the files it published for
    # path -> (mtime, size, text or None): the workspace's files as the scope search last read them
    files: dict[str, tuple[float, int, str | None]] = field(default_factory=dict)
    # path -> ((mtime, size), the real paths it names): the references of a file that names the opened one
    named: dict[str, tuple[tuple[float, int], list[str]]] = field(default_factory=dict)
    listing: list[str] | None = None  # the workspace's files, listed again at each check
    absolute: set[str] = field(default_factory=set)  # names of the setup's files written in absolute paths
    docs_url: str | None = None  # `docs-url` of the workspace's configuration, as of the last check
    # the editor tells of every file changed on disk (didChangeWatchedFiles): the workspace's listing
    # (context.tree) is then kept between checks and updated file by file, never listed again per edit
    watching: bool = False
    overlaid: set[str] = field(default_factory=set)  # files whose listed facts come from an editor's buffer


_ANSWERED = object()  # a request already answered with an error while it was read


class ShardshiftProtocol(LanguageServerProtocol):
    """Chooses the position encoding: UTF-32 (code points, what findings count) when the client
    offers it, else UTF-16 (the LSP default every client supports). Every request gets an answer,
    so that no client waits forever: one whose parameters do not read gets InvalidParams, one
    after `shutdown` gets InvalidRequest. `exit` without `shutdown` ends the process with 1."""

    exit_code = 0

    def structure_message(self, data):
        from pygls.exceptions import JsonRpcException

        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            if isinstance(data, dict) and "id" in data and "method" in data:
                self._send_response(data["id"], error=types.ResponseError(code=error.code, message=error.message))
                return _ANSWERED
            raise

    def handle_message(self, message):
        if message is _ANSWERED:
            return
        method = getattr(message, "method", None)
        if self._shutdown and method not in (None, types.EXIT) and getattr(message, "id", None) is not None:
            self._send_response(message.id, error=types.ResponseError(
                code=-32600, message=f"the server is shut down: {method} is not answered (send exit)"))
            return
        super().handle_message(message)
        # pygls keeps the future of every notification it runs through a generator handler (didOpen,
        # didChange, ...) under a fresh id and never drops it: 2 MB per 1,000 edits. Done futures go.
        finished = [key for key, future in self._request_futures.items() if future.done()]
        for key in finished:
            del self._request_futures[key]

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args):
        ShardshiftProtocol.exit_code = 0 if self._shutdown else 1
        return (yield from super().lsp_exit(*args))

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams):
        general = params.capabilities.general
        if general is not None and general.position_encodings:
            general.position_encodings = [choose_encoding(general.position_encodings)]
        return (yield from super().lsp_initialize(params))


def choose_encoding(offered) -> str:
    """UTF-32 when the client offers it (no conversion), else UTF-16 (every client supports it)."""
    return types.PositionEncodingKind.Utf32 if types.PositionEncodingKind.Utf32 in list(offered or ()) \
        else types.PositionEncodingKind.Utf16


class ShardshiftServer(LanguageServer):
    def __init__(self) -> None:
        from shardshift import __version__

        super().__init__("shardshift", __version__, protocol_cls=ShardshiftProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.state = Workspace()
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="shardshift-check")
        self.debounced: dict[str, asyncio.Task] = {}

    # -- helpers run on the event loop -----------------------------------------------------------

    def markup(self, where: str) -> types.MarkupKind:
        """Markdown when the client shows it there ("hover" or "completion"), else plain text."""
        try:
            text = self.client_capabilities.text_document
            if where == "hover":
                formats = text.hover.content_format if text and text.hover else None
            else:
                item = text.completion.completion_item if text and text.completion else None
                formats = item.documentation_format if item else None
        except AttributeError:
            formats = None
        return types.MarkupKind.Markdown if formats and types.MarkupKind.Markdown in formats \
            else types.MarkupKind.PlainText

    @property
    def encoding(self) -> str:
        try:
            return self.workspace.position_encoding or types.PositionEncodingKind.Utf16
        except RuntimeError:
            return types.PositionEncodingKind.Utf16

    def log(self, message: str, kind: types.MessageType = types.MessageType.Error) -> None:
        try:
            self.window_log_message(types.LogMessageParams(type=kind, message=message))
        except Exception:  # noqa: BLE001 - logging must never fail a handler
            logging.getLogger(__name__).exception("cannot log to the client")

    def open_texts(self) -> dict[str, tuple[str, int | None, str]]:
        """real path -> (uri, version, text) of every open file document."""
        out = {}
        for uri, document in list(self.workspace.text_documents.items()):
            path = to_fs_path(uri)
            if path and "\0" not in path:  # a NUL byte names no file: that document alone is not checked
                out[os.path.realpath(path)] = (uri, document.version, document.source)
        return out

    async def run(self, job, *args):
        return await asyncio.get_running_loop().run_in_executor(self.worker, job, *args)

    async def check_and_publish(self, uri: str, version: int | None) -> None:
        try:
            document = self.workspace.get_text_document(uri)
            if version is not None and document.version != version:
                return  # a newer version is on its way
            path = to_fs_path(uri)
            if not path or "\0" in path or not os.path.isfile(path):
                return
            texts = self.open_texts()
            published = await self.run(check_setup, self.state, path, texts, self.encoding)
            if published is None:
                return
            current = self.open_texts()
            for file_path, diagnostics in published.items():
                real = os.path.realpath(file_path)
                seen = texts.get(real)
                now = current.get(real)
                if seen is not None and now is not None and seen[1] != now[1]:
                    continue  # checked an older version than the editor holds: a newer check comes
                target = now[0] if now is not None else from_fs_path(file_path)
                self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                    uri=target, diagnostics=diagnostics, version=now[1] if now is not None else None))
        except Exception as error:  # noqa: BLE001
            from shardshift.api import ShardshiftError

            if isinstance(error, ShardshiftError):  # a bad [tool.shardshift]: say what, once per check
                self.log(f"shardshift: {error.message}")
            else:
                self.log(f"shardshift: checking {uri} failed:\n{traceback.format_exc()}")

    def schedule(self, uri: str, version: int | None, delay: float) -> None:
        previous = self.debounced.pop(uri, None)
        if previous is not None:
            previous.cancel()

        async def later() -> None:
            if delay:
                await asyncio.sleep(delay)
            self.debounced.pop(uri, None)
            await self.check_and_publish(uri, version)

        self.debounced[uri] = asyncio.ensure_future(later())


# -- the work, in the worker thread -----------------------------------------------------------------

def _options(root: str | None):
    """The check options of the workspace: its [tool.shardshift] / shardshift.toml, as the CLI reads it."""
    from shardshift import api
    from shardshift import config as configuration

    found = configuration.find(root) if root else None
    options = api.resolve_options(config=found[0] if found else None, isolated=found is None, skip_unrecognised=True)
    if root:  # as `shardshift check <workspace>`: pins and consumers are looked for up to its top
        options.context.roots = (os.path.realpath(root),)
    return options


def _set_overlay(texts: dict[str, tuple[str, int | None, str]]) -> None:
    from shardshift import check

    check.OVERLAY.clear()
    # a buffer larger than check reads is left to the file on disk, which check then declines as check does
    check.OVERLAY.update({path: text for path, (_, _, text) in texts.items() if len(text) <= check.MAX_BYTES})


def _text(state: Workspace, path: str) -> str | None:
    """A workspace file's text, read again only when it changed on disk (the editor's unsaved
    text when it is open)."""
    from shardshift import check

    unsaved = check.OVERLAY.get(path)  # a path of the walk under the real root (the overlay's keys are real)
    if unsaved is not None:
        return unsaved
    try:
        info = os.stat(path)
    except (OSError, ValueError):  # ValueError: a NUL byte in the path
        return None
    if not stat.S_ISREG(info.st_mode):  # a FIFO would block the worker, a device never ends
        return None
    known = state.files.get(path)
    if known is not None and known[0] == info.st_mtime and known[1] == info.st_size:
        return known[2]
    text = None
    if info.st_size <= SCAN_MAX_BYTES:
        try:
            with open(path, "rb") as handle:
                raw = handle.read(SCAN_MAX_BYTES + 1)  # the size may have grown since stat
            text = raw.decode("utf-8", "replace") if len(raw) <= SCAN_MAX_BYTES else None
        except OSError:
            text = None
    state.files[path] = (info.st_mtime, info.st_size, text)
    return text


def _named(document, state: Workspace | None = None) -> list[str]:
    """The files `document` names. A path from another machine (`/home/x/proj/configs/ds.json`)
    names the workspace file with the longest common path suffix, as `check` resolves it
    (setup.build_setups) when that file is in the run."""
    out = []
    references = list(getattr(document, "references", ()))
    for _, variant in getattr(document, "variants", None) or ():  # a script that chooses between configurations
        references += getattr(variant, "references", ())
    for reference in references:
        if reference.resolved:
            if os.path.isfile(reference.resolved) and reference.resolved not in out:
                out.append(reference.resolved)
        elif state is not None and state.root and os.path.isabs(reference.target) and "$" not in reference.target:
            from shardshift.context.paths import by_suffix

            name = os.path.basename(reference.target)
            found = by_suffix(reference.target, _called(state, name))
            if found is not None:
                out.append(found)
    return out


def _files(state: Workspace) -> list[str]:
    """The files of the file's own folder (no workspace folder: it stands for one)."""
    return state.listing or []


def _tree(state: Workspace):
    """The workspace's listing (context.tree): kept and updated from the editor's events when it
    sends them, else listed once per check (as `check` does)."""
    from shardshift.context import tree

    return tree.pin(state.root) if state.watching else tree.tree_of(state.root)


def _naming(state: Workspace, name: str) -> list[str]:
    """The workspace files that may name a file called `name` (they mention the name)."""
    if not state.root:
        return [p for p in _files(state) if name in (_text(state, p) or "")]
    return [p for p in _tree(state).naming(name) if p.endswith(SCAN_SUFFIXES) or "." not in os.path.basename(p)]


def _called(state: Workspace, name: str) -> list[str]:
    """The workspace files called `name`."""
    if not state.root:
        return [p for p in _files(state) if os.path.basename(p) == name]
    return _tree(state).find(name)


def sync_listing(state: Workspace, texts: dict[str, tuple[str, int | None, str]]) -> None:
    """The kept listing's facts of the open files from their buffers, and of the files closed since
    from disk (worker thread)."""
    if not (state.root and state.watching):
        return
    from shardshift.context import tree

    kept = tree.pin(state.root)
    for path in state.overlaid - set(texts):
        kept.refresh(path)
    for path, (_, _, text) in texts.items():
        kept.refresh(path, text)
    state.overlaid = set(texts)


def _watch(state: Workspace) -> None:
    """The editor will tell of every change on disk: keep the workspace's listing from now on."""
    state.watching = True


def changed_on_disk(state: Workspace, paths: list[str]) -> None:
    """Files changed on disk (the editor's events, a save): the kept listing follows them; a change
    to what git ignores, or too many at once (a checkout), lists the workspace again (worker thread)."""
    if not (state.root and state.watching):
        return
    from shardshift.context import tree

    if len(paths) > 500 or any(os.path.basename(p) == ".gitignore" or f"{os.sep}.git{os.sep}" in p
                               for p in paths):
        tree.unpin(state.root)
        return
    kept = tree.pin(state.root)
    for path in paths:
        if path not in state.overlaid:  # an open file's buffer wins over the disk
            kept.refresh(path)


def scope_of(state: Workspace, path: str) -> list[str] | None:
    """The files checked together with `path`: it, the files it names (and they name), and the
    workspace files that name it (a launch script, an Accelerate YAML) with the files they name.
    None when `path` is no configuration."""
    from shardshift.check import UNRECOGNISED, load

    document = load(path, explicit=True)
    if document is None or document.format == UNRECOGNISED:
        return None
    real = os.path.realpath(path)
    scope: dict[str, None] = {real: None}
    state.absolute = set()
    # no workspace folder: the file's own directory stands for it
    here = os.path.dirname(real)
    state.listing = None if state.root else [os.path.join(here, n) for n in sorted(os.listdir(here))
                                             if os.path.isfile(os.path.join(here, n))]

    def follow(start, depth: int) -> None:
        for target in _named(start, state):
            target_real = os.path.realpath(target)
            if target_real in scope:
                continue
            scope[target_real] = None
            if depth < SCOPE_DEPTH:
                loaded = load(target, explicit=False)
                if loaded is not None:
                    follow(loaded, depth + 1)

    follow(document, 1)
    # the files that name it, and those that name them (a launch script -> its YAML -> the ds_config)
    named, depth = [real], 1
    while named and depth <= SCOPE_DEPTH:
        referrers = []
        for target in named:
            name = os.path.basename(target)
            for candidate in _naming(state, name):  # under the real root: a real path but for a symbolic link
                if candidate in scope:
                    continue
                text = _text(state, candidate)
                if not text or name not in text:
                    continue
                if name not in state.absolute and re.search(r"(?:^|[\s\"'`=:(\[,])/[^\s\"'`]*/" + re.escape(name),
                                                            text, re.M):
                    state.absolute.add(name)  # a path from another machine may mean a namesake (`namesakes`)
                candidate_real = os.path.realpath(candidate)
                if candidate_real in scope or target not in _names_of(state, candidate):
                    continue
                scope[candidate_real] = None
                referrers.append(candidate_real)
                referrer = load(candidate, explicit=False)
                if referrer is not None:
                    follow(referrer, 2)
        named, depth = referrers, depth + 1
    return list(scope)


def _names_of(state: Workspace, path: str) -> list[str]:
    """The real paths of the files `path` names (its unsaved text when open; else cached by its
    modification time: a file that mentions the opened file's name is read once, not at every keystroke)."""
    from shardshift import check

    unsaved = os.path.realpath(path) in check.OVERLAY
    stamp = state.files.get(path, (0.0, 0, None))[:2]
    known = state.named.get(path)
    if not unsaved and known is not None and known[0] == stamp:
        return known[1]
    document = check.load(path, explicit=False)
    targets = [] if document is None or document.syntax is not None else \
        [os.path.realpath(t) for t in _named(document, state)]
    if not unsaved:
        state.named[path] = (stamp, targets)
    return targets


def namesakes(state: Workspace, scope: list[str]) -> list[str]:
    """The other ds_configs of the workspace with the name of one in `scope` that some file names
    by an absolute path (`/home/x/proj/configs/ds.json`, from another machine): checked with it
    (not shown), because a check resolves such a path by its suffix among the ds_configs it sees
    (who reads a ds_config, DS420 and the rules of its consumers), and `check <workspace>` sees
    them all. Computed by `scope_of`; none in the common case."""
    from shardshift.check import load

    names = {os.path.basename(p) for p in scope} & state.absolute
    if not names:
        return []
    inside = set(scope)
    out = []
    for candidate in sorted({c for name in names for c in _called(state, name)}):
        if candidate not in inside and os.path.realpath(candidate) not in inside:
            document = load(candidate, explicit=False)
            if document is not None and document.format == "deepspeed":
                out.append(os.path.realpath(candidate))
    return out


def setup_findings(state: Workspace, path: str) -> tuple[list[str], list] | None:
    """The files of `path`'s setup and the findings a check of them shows (the overlay is set), or
    None when `path` is no configuration."""
    scope = scope_of(state, path)
    if scope is None:
        return None
    context_only = set(namesakes(state, scope))
    findings, options, _ = run_scope(scope + sorted(context_only), state.root)
    state.docs_url = options.docs_url
    return scope, [f for f in findings if os.path.realpath(f.file) not in context_only]


def run_scope(scope: list[str], root: str | None):
    """The check of `scope` with the workspace's options: (findings shown, the options)."""
    from shardshift import api

    options = _options(root)
    result = api.run(scope, options)
    findings = result.findings
    if options.min_severity is not None:
        floor = api.SEVERITIES.index(options.min_severity)
        findings = [f for f in findings if api.SEVERITIES.index(f.severity) >= floor]
    return findings, options, result


def diagnostics_of(findings, scope: list[str], encoding: str,
                   docs_url: str | None = None) -> dict[str, list[types.Diagnostic]]:
    """file -> its diagnostics: each finding in its file, and again in each other file it relates to;
    each links to its rule's page under `docs_url` (the workspace's), else the package's."""
    out: dict[str, list[types.Diagnostic]] = {path: [] for path in scope}
    scope_set = set(out)
    lines_of: dict[str, list[str]] = {}

    def lines(path: str) -> list[str]:
        if path not in lines_of:
            from shardshift import check

            text = check.OVERLAY.get(os.path.realpath(path))
            if text is None:
                from shardshift.files import read_text

                text = read_text(path) or ""
            lines_of[path] = split_lines(text)
        return lines_of[path]

    for finding in findings:
        file = os.path.realpath(finding.file)
        related = [types.DiagnosticRelatedInformation(
            location=types.Location(uri=from_fs_path(os.path.abspath(r.file)),
                                    range=token_range(lines(r.file), r.line, r.column, encoding)),
            message=r.message) for r in finding.related]
        out.setdefault(file, []).append(types.Diagnostic(
            range=token_range(lines(finding.file), finding.line, finding.column, encoding),
            message=message_of(finding), severity=SEVERITY[finding.severity], code=finding.code,
            code_description=types.CodeDescription(href=rule_url(finding.code, docs_url)), source=SOURCE,
            related_information=related or None, data=finding_data(finding)))
        here = types.DiagnosticRelatedInformation(
            location=types.Location(uri=from_fs_path(os.path.abspath(finding.file)),
                                    range=token_range(lines(finding.file), finding.line, finding.column, encoding)),
            message=f"{finding.code}: {finding.message}")
        mirrored: set[tuple] = set()
        for r in finding.related:
            other = os.path.realpath(r.file)
            # shown in the other files of the setup; a place outside it (a script elsewhere that may
            # read this ds_config) is a related location only: its own check decides what it shows
            if other == file or other not in scope_set or (other, r.line, r.column) in mirrored:
                continue
            mirrored.add((other, r.line, r.column))
            out.setdefault(other, []).append(types.Diagnostic(
                range=token_range(lines(r.file), r.line, r.column, encoding),
                message=f"{r.message} — {finding.code} in {os.path.basename(finding.file)}:{finding.line}: "
                        f"{finding.message}",
                severity=SEVERITY[finding.severity], code=finding.code,
                code_description=types.CodeDescription(href=rule_url(finding.code, docs_url)), source=SOURCE,
                related_information=[here], data=finding_data(finding, mirror=True)))
    return out


def check_setup(state: Workspace, path: str, texts: dict, encoding: str) -> dict[str, list] | None:
    """Check the setup of `path` (worker thread): file -> diagnostics, including empty lists for
    the files whose earlier diagnostics are gone. None: nothing to publish."""
    _set_overlay(texts)
    sync_listing(state, texts)
    real = os.path.realpath(path)
    found = setup_findings(state, path)
    if found is None:
        before = state.published.pop(real, set())
        return {p: [] for p in before | {real}}
    scope, findings = found
    published = diagnostics_of(findings, scope, encoding, state.docs_url)
    before = state.published.get(real, set())
    for gone in before - set(published):
        published[gone] = []
    state.published[real] = set(published)
    return published


# -- quick fixes ------------------------------------------------------------------------------------

def _finding_from(data: Any):
    from shardshift.rules.base import Finding

    if not isinstance(data, dict) or data.get("mirror") or data.get("fix_kind") not in ("rename-key", "replace-value"):
        return None
    pointer, fix_text = data.get("pointer"), data.get("fix")
    if not isinstance(pointer, str) or not isinstance(fix_text, str):
        return None  # not a diagnostic of this server (a client may send back anything)
    return Finding(str(data.get("code", "")), "warning", str(data.get("file", "")), 1, 1, pointer,
                   str(data.get("message", "")), fix_text, fix_kind=data["fix_kind"])


def _offset_position(lines: list[str], text: str, offset: int, encoding: str) -> types.Position:
    before = text[:offset]
    row = len(split_lines(before)) - 1
    column = len(split_lines(before)[-1])
    return to_client(lines, row, column, encoding)


def _minimal_edit(before: str, after: str, encoding: str) -> types.TextEdit:
    start = 0
    limit = min(len(before), len(after))
    while start < limit and before[start] == after[start]:
        start += 1
    end_before, end_after = len(before), len(after)
    while end_before > start and end_after > start and before[end_before - 1] == after[end_after - 1]:
        end_before -= 1
        end_after -= 1
    lines = split_lines(before)
    return types.TextEdit(range=types.Range(start=_offset_position(lines, before, start, encoding),
                                            end=_offset_position(lines, before, end_before, encoding)),
                          new_text=after[start:end_after])


def code_actions(state: Workspace, path: str, texts: dict, uri: str, version: int | None,
                 diagnostics: list[types.Diagnostic], encoding: str, want_fix_all: bool) -> list[types.CodeAction]:
    """A quick fix per fixable diagnostic, and "fix all" for the file (worker thread)."""
    from shardshift import fix, formats
    from shardshift.check import load

    _set_overlay(texts)
    real = os.path.realpath(path)
    text = texts[real][2] if real in texts else None
    document = load(path, explicit=True)
    if text is None or document is None or document.root is None or document.syntax is not None:
        return []
    identifier = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
    actions = []
    for diagnostic in diagnostics:
        finding = _finding_from(diagnostic.data)
        if finding is None:
            continue
        edits, _ = fix.plan_edits(document, [finding])
        if not edits:
            continue
        after = fix.apply_edits(document.text, edits)
        if formats.reader(document.format).read(after, path).syntax is not None:
            continue  # never make a file unreadable
        edit = _minimal_edit(text, _with_text_prefix(text, document.text, after), encoding)
        title = (f"Rename {finding.pointer.rsplit('/', 1)[-1]!r} to {finding.fix!r}" if finding.fix_kind == "rename-key"
                 else f"Set {finding.pointer} to {finding.fix}")
        actions.append(types.CodeAction(
            title=f"{title} ({finding.code})", kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
            is_preferred=True, edit=types.WorkspaceEdit(document_changes=[
                types.TextDocumentEdit(text_document=identifier, edits=[edit])])))
    if want_fix_all:
        after = fix_all(state, path)
        if after is not None and after != document.text:
            edit = _minimal_edit(text, _with_text_prefix(text, document.text, after), encoding)
            actions.append(types.CodeAction(
                title=FIX_ALL_TITLE, kind=types.CodeActionKind.SourceFixAll,
                edit=types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=identifier,
                                                                                  edits=[edit])])))
    return actions


def _with_text_prefix(editor_text: str, read_text: str, after: str) -> str:
    """The fixed text in the editor's terms (the reader drops a byte-order mark the editor may keep)."""
    if editor_text != read_text and editor_text.endswith(read_text):
        return editor_text[:len(editor_text) - len(read_text)] + after
    return after


def fix_all(state: Workspace, path: str) -> str | None:
    """The text of `path` with every safe fix of its setup's check applied (worker thread; the
    overlay is set), or None."""
    from shardshift import fix
    from shardshift.check import check_documents, link, load
    from shardshift.context.environment import given

    scope = scope_of(state, path)
    if scope is None:
        return None
    options = _options(state.root)
    documents = [d for d in (load(p, explicit=True) for p in scope + namesakes(state, scope)) if d is not None]
    context = options.context
    link(documents)
    with given(options.env):
        outcome = fix.fix_documents(documents, context, lambda docs: check_documents(
            docs, context, options.select, options.ignore, options.per_file_ignores))
    real = os.path.realpath(path)
    for changed_path, (_, after) in outcome.changed.items():
        if os.path.realpath(changed_path) == real:
            return after
    return None


# -- the server ---------------------------------------------------------------------------------------

def build() -> ShardshiftServer:
    server = ShardshiftServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: ShardshiftServer, params: types.InitializeParams) -> None:
        root = None
        if params.workspace_folders:
            root = to_fs_path(params.workspace_folders[0].uri)
        elif params.root_uri:
            root = to_fs_path(params.root_uri)
        elif params.root_path:
            root = params.root_path
        root = os.path.realpath(root) if root else None
        if root is not None and (os.path.dirname(root) == root or root == os.path.realpath(os.path.expanduser("~"))):
            # the filesystem's root or a home folder is no project: walking it would never end, so
            # each file is checked with its own folder's files, as without a workspace
            ls.log(f"shardshift: the workspace {root} is not searched as one project; each file is checked "
                   "with the files of its own folder", types.MessageType.Info)
            root = None
        ls.state.root = root

    @server.feature(types.INITIALIZED)
    async def initialized(ls: ShardshiftServer, params: types.InitializedParams) -> None:
        """Ask to hear of files changed on disk (another program, `git checkout`), when the client can."""
        try:
            watched = ls.client_capabilities.workspace and ls.client_capabilities.workspace.did_change_watched_files
            if not (watched and watched.dynamic_registration):
                return
            await ls.client_register_capability_async(types.RegistrationParams(registrations=[types.Registration(
                id="shardshift-watched-files", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(
                    watchers=[types.FileSystemWatcher(glob_pattern="**/*")]))]))
            await ls.run(_watch, ls.state)
        except Exception:  # noqa: BLE001
            ls.log(f"shardshift: cannot watch files:\n{traceback.format_exc()}", types.MessageType.Warning)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(ls: ShardshiftServer, params: types.DidChangeWatchedFilesParams) -> None:
        """A file changed on disk: the open files whose setup holds it (or that are it) are checked again."""
        changed = {os.path.realpath(p) for p in (to_fs_path(c.uri) or "" for c in params.changes) if p and "\0" not in p}
        asyncio.ensure_future(ls.run(changed_on_disk, ls.state, sorted(changed)))  # before the checks it schedules
        for real, (uri, _, _) in ls.open_texts().items():
            held = ls.state.published.get(real, set())
            if real in changed or changed & held or any(c.type != types.FileChangeType.Changed for c in params.changes):
                ls.schedule(uri, None, DEBOUNCE_SECONDS)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: ShardshiftServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, None, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: ShardshiftServer, params: types.DidSaveTextDocumentParams) -> None:
        path = to_fs_path(params.text_document.uri)
        if path and "\0" not in path:
            asyncio.ensure_future(ls.run(changed_on_disk, ls.state, [os.path.realpath(path)]))
        ls.schedule(params.text_document.uri, None, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: ShardshiftServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, params.text_document.version, DEBOUNCE_SECONDS)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: ShardshiftServer, params: types.DidCloseTextDocumentParams) -> None:
        pending = ls.debounced.pop(params.text_document.uri, None)
        if pending is not None:
            pending.cancel()
        # the unsaved text is gone with the editor's buffer: what stays shown is the file on disk
        ls.schedule(params.text_document.uri, None, 0)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll]))
    async def code_action(ls: ShardshiftServer, params: types.CodeActionParams):
        try:
            uri = params.text_document.uri
            path = to_fs_path(uri)
            if not path:
                return []
            only = params.context.only
            want_fix_all = not only or any(str(k).startswith(("source", "source.fixAll")) for k in only)
            want_quick = not only or any(str(k).startswith("quickfix") for k in only)
            diagnostics = [d for d in params.context.diagnostics if d.source == SOURCE] if want_quick else []
            if not diagnostics and not want_fix_all:
                return []
            document = ls.workspace.get_text_document(uri)
            return await ls.run(code_actions, ls.state, path, ls.open_texts(), uri, document.version, diagnostics,
                                ls.encoding, want_fix_all)
        except Exception:  # noqa: BLE001
            ls.log(f"shardshift: code actions failed:\n{traceback.format_exc()}")
            return []

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: ShardshiftServer, params: types.HoverParams):
        try:
            from shardshift.lsp import knowledge

            document = ls.workspace.get_text_document(params.text_document.uri)
            text, encoding = document.source, ls.encoding
            lines = split_lines(text)
            line, character = from_client(lines, params.position, encoding)
            found = knowledge.hover(to_fs_path(params.text_document.uri) or "", text, line, character)
            if found is None:
                return None
            span = found.span
            return types.Hover(
                contents=types.MarkupContent(kind=ls.markup("hover"), value=found.markdown),
                range=types.Range(start=to_client(lines, span.line, span.character, encoding),
                                  end=to_client(lines, span.end_line, span.end_character, encoding)))
        except Exception:  # noqa: BLE001
            ls.log(f"shardshift: hover failed:\n{traceback.format_exc()}")
            return None

    kinds = {"key": types.CompletionItemKind.Property, "flag": types.CompletionItemKind.Field,
             "value": types.CompletionItemKind.Value}

    @server.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(trigger_characters=['"', "-", "_"]))
    def completion(ls: ShardshiftServer, params: types.CompletionParams):
        try:
            from shardshift.lsp import knowledge

            document = ls.workspace.get_text_document(params.text_document.uri)
            text = document.source
            lines = split_lines(text)
            line, character = from_client(lines, params.position, ls.encoding)
            path = to_fs_path(params.text_document.uri) or ""
            items = knowledge.complete(path, text, line, character)
            # An edit of exactly what is typed so far: clients differ on what a word is (`-` is none
            # in VS Code), and a bare insert_text after `--tensor-m` would keep half of the flag.
            span = knowledge.completion_span(path, text, line, character) if items else None
            typed = None if span is None else types.Range(
                start=to_client(lines, span.line, span.character, ls.encoding),
                end=to_client(lines, span.end_line, span.end_character, ls.encoding))
            markup = ls.markup("completion")
            return types.CompletionList(is_incomplete=False, items=[types.CompletionItem(
                label=item.label, detail=item.detail or None,
                documentation=types.MarkupContent(kind=markup, value=item.documentation)
                if item.documentation else None,
                insert_text=item.insert_text, kind=kinds.get(item.kind),
                text_edit=None if typed is None else types.TextEdit(range=typed, new_text=item.insert_text))
                for item in items])
        except Exception:  # noqa: BLE001
            ls.log(f"shardshift: completion failed:\n{traceback.format_exc()}")
            return types.CompletionList(is_incomplete=False, items=[])

    return server


def main() -> int:
    build().start_io()
    return ShardshiftProtocol.exit_code  # 1 when the client sent exit without shutdown first
