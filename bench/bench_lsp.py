"""Latency of `shardshift lsp`: from didOpen (and from the end of the debounce after a didChange)
to the file's publishDiagnostics, with the real server process, for files of a workspace.

    python bench/bench_lsp.py WORKSPACE FILE [FILE ...]

Prints one line per file: the first open (the server's imports and the workspace scan included
for the first file), a second check after an edit (the time after the 300 ms debounce), and the
number of diagnostics. Run with PYTHONPATH=src to measure the worktree's code. The client accepts
the server's registration for changes on disk, as editors do (BENCH_NO_WATCH=1: a client that
does not, so the server lists the workspace at each check).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

DEBOUNCE = 0.3
EDITS = 7


async def main(workspace: Path, files: list[Path]) -> None:
    client = LanguageClient("bench", "0")
    published: dict[str, asyncio.Event] = {}
    counts: dict[str, int] = {}
    waiting: dict[str, int] = {}  # uri -> the version whose diagnostics are awaited

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def diagnostics(ls, params: types.PublishDiagnosticsParams) -> None:
        if params.version is None or params.version != waiting.get(params.uri):
            return  # a check of another file that covers this one
        counts[params.uri] = len(params.diagnostics)
        published.setdefault(params.uri, asyncio.Event()).set()

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(ls, params: types.RegistrationParams) -> None:
        return None  # an editor that tells of files changed on disk (the server keeps its listing)

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def log(ls, params) -> None:
        print(params.message, file=sys.stderr)

    await client.start_io(sys.executable, "-m", "shardshift", "lsp")
    started = time.perf_counter()
    await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(workspace=types.WorkspaceClientCapabilities(
            did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(
                dynamic_registration=not os.environ.get("BENCH_NO_WATCH")))),
        root_uri=workspace.resolve().as_uri()))
    client.initialized(types.InitializedParams())
    print(f"initialize: {1000 * (time.perf_counter() - started):.0f} ms")
    for path in files:
        uri = path.resolve().as_uri()
        text = path.read_text(encoding="utf-8", errors="replace")
        published[uri], waiting[uri] = asyncio.Event(), 1
        started = time.perf_counter()
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="", version=1, text=text)))
        await asyncio.wait_for(published[uri].wait(), 120)
        opened = time.perf_counter() - started
        changes = []
        for version in range(2, 2 + EDITS):
            published[uri], waiting[uri] = asyncio.Event(), version
            started = time.perf_counter()
            client.text_document_did_change(types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text + "\n" * version)]))
            await asyncio.wait_for(published[uri].wait(), 120)
            changes.append(time.perf_counter() - started - DEBOUNCE)
        print(f"{os.path.relpath(path, workspace)}: open {1000 * opened:.0f} ms, change {1000 * statistics.median(changes):.0f} ms "
              f"(median of {EDITS} edits, after the debounce; the slowest {1000 * max(changes):.0f} ms), "
              f"{counts.get(uri, 0)} diagnostics")
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]]))
