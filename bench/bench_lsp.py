"""Latency of `shardshift lsp`: from didOpen (and from the end of the debounce after a didChange)
to the file's publishDiagnostics, with the real server process, for files of a workspace.

    python bench/bench_lsp.py WORKSPACE FILE [FILE ...]

Prints one line per file: the first open (the server's imports and the workspace scan included
for the first file), a second check after an edit (the time after the 300 ms debounce), and the
number of diagnostics. Run with PYTHONPATH=src to measure the worktree's code.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

DEBOUNCE = 0.3


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

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def log(ls, params) -> None:
        print(params.message, file=sys.stderr)

    await client.start_io(sys.executable, "-m", "shardshift", "lsp")
    started = time.perf_counter()
    await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(), root_uri=workspace.resolve().as_uri()))
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
        published[uri], waiting[uri] = asyncio.Event(), 2
        started = time.perf_counter()
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text + "\n")]))
        await asyncio.wait_for(published[uri].wait(), 120)
        changed = time.perf_counter() - started - DEBOUNCE
        print(f"{os.path.relpath(path, workspace)}: open {1000 * opened:.0f} ms, change {1000 * changed:.0f} ms "
              f"(after the debounce), {counts.get(uri, 0)} diagnostics")
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]]))
