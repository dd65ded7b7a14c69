"""Issue 32, the editor updates: when the client tells of changes on disk (it accepts the server's
`workspace/didChangeWatchedFiles` registration), the server keeps the workspace's listing between
checks and updates it from those events and from saves, never listing the workspace again per
edit. Shown through what only the kept listing explains: a file written without an event is not
seen, and the event makes it seen."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("pygls", reason="the lsp extra (pygls) is not installed")
pytest_lsp = pytest.importorskip("pytest_lsp", reason="pytest-lsp (the test extra) is not installed")

from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

from conftest import ROOT  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

WAIT = 30.0
AUTO = '{"train_micro_batch_size_per_gpu": "auto", "gradient_clipping": "auto", "zero_optimization": {"stage": 2}}\n'
LAUNCH = "deepspeed train.py --deepspeed configs/ds_config.json\n"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("lsp-listing")
    (root / "configs").mkdir()
    (root / "configs" / "ds_config.json").write_text(AUTO, encoding="utf-8")
    (root / "train.py").write_text("import deepspeed\n", encoding="utf-8")
    (root / "pyproject.toml").write_text('[tool.shardshift]\nmin-severity = "info"\n', encoding="utf-8")
    (root / ".gitignore").write_text("scratch/\n", encoding="utf-8")
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-q", "-m", "first")):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=root, check=True,
                       capture_output=True)
    return root.resolve()


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(
    server_command=[sys.executable, "-m", "shardshift", "lsp"],
    server_env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}))
async def client(lsp_client: LanguageClient, workspace):
    registered = []

    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(params: types.RegistrationParams):
        registered.extend(r.method for r in params.registrations)

    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(workspace=types.WorkspaceClientCapabilities(
            did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(dynamic_registration=True))),
        root_uri=workspace.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="ws")]))
    lsp_client.registered = registered
    yield
    await lsp_client.shutdown_session()


async def _sleep() -> None:
    import asyncio

    await asyncio.sleep(0.05)


def _event(client: LanguageClient, path, kind: types.FileChangeType) -> None:
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=path.as_uri(), type=kind)]))


async def _after(client: LanguageClient, uri: str, path, version: int, send) -> set[str]:
    """Send something, then edit the open file (a new version) and return what its check shows."""
    send()
    client.diagnostics.pop(uri, None)
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=AUTO + " " * version)]))
    for _ in range(int(WAIT / 0.05)):
        if uri in client.diagnostics:
            return {d.code for d in client.diagnostics[uri]}
        await _sleep()
    raise AssertionError(f"no diagnostics for {uri} at version {version}")


@pytest.mark.asyncio(loop_scope="module")
async def test_the_kept_listing_follows_the_editors_events(client, workspace):
    for _ in range(int(WAIT / 0.05)):  # the server registers after `initialized`
        if types.WORKSPACE_DID_CHANGE_WATCHED_FILES in client.registered:
            break
        await _sleep()
    assert types.WORKSPACE_DID_CHANGE_WATCHED_FILES in client.registered
    config = workspace / "configs" / "ds_config.json"
    uri = config.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id="json", version=1, text=AUTO)))
    for _ in range(int(WAIT / 0.05)):
        if uri in client.diagnostics:
            break
        await _sleep()
    assert "DS420" in {d.code for d in client.diagnostics[uri]}  # nothing passes it to a Trainer yet

    script = workspace / "run.sh"
    script.write_text(LAUNCH, encoding="utf-8")  # written without an event: the kept listing does not know
    assert "DS420" in await _after(client, uri, config, 2, lambda: None)
    # the event tells of it: now a launcher passes it (DS420 gone), without listing the workspace again
    assert "DS420" not in await _after(client, uri, config, 3, lambda: _event(client, script,
                                                                               types.FileChangeType.Created))
    script.unlink()
    assert "DS420" in await _after(client, uri, config, 4, lambda: _event(client, script,
                                                                           types.FileChangeType.Deleted))
    # a file git ignores is no part of the repository, event or not
    ignored = workspace / "scratch" / "run.sh"
    ignored.parent.mkdir()
    ignored.write_text(LAUNCH, encoding="utf-8")
    assert "DS420" in await _after(client, uri, config, 5, lambda: _event(client, ignored,
                                                                           types.FileChangeType.Created))
