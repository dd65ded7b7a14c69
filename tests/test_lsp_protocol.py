"""The language server answers every request and keeps serving on hostile workspaces (issue 31).

Driven by a plain JSON-RPC client written here (framing over the server's stdin and stdout), a
second client besides pytest-lsp: each request gets a response, `exit` without `shutdown` ends
the process with 1, and a FIFO, a link to /dev/zero or a document path with a NUL byte never keep
another document's diagnostics from arriving."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the lsp extra is not installed")

BAD = '{\n  "train_batch_size": 8,\n  "zero_optimisation": {"stage": 2}\n}\n'


class Client:
    def __init__(self, cwd: Path) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        self.process = subprocess.Popen([sys.executable, "-m", "shardshift", "lsp"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=cwd, env=env)
        self.buffer = b""
        self.messages: list[dict] = []

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def _read(self, timeout: float) -> None:
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        if not ready:
            return
        chunk = os.read(self.process.stdout.fileno(), 1 << 16)
        self.buffer += chunk
        while b"\r\n\r\n" in self.buffer:
            head, rest = self.buffer.split(b"\r\n\r\n", 1)
            length = int(next(line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
                         .split(b":")[1])
            if len(rest) < length:
                return
            self.messages.append(json.loads(rest[:length]))
            self.buffer = rest[length:]

    def wait_for(self, test, timeout: float = 20.0) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = next((m for m in self.messages if test(m)), None)
            if found is not None:
                return found
            self._read(0.2)
        raise AssertionError(f"no such message within {timeout} s; got {[m.get('method', m.get('id')) for m in self.messages]}")

    def response(self, ident: int) -> dict:
        return self.wait_for(lambda m: m.get("id") == ident and "method" not in m)

    def start(self, root: Path) -> None:
        self.send({"id": 1, "method": "initialize",
                   "params": {"processId": None, "rootUri": root.as_uri(), "capabilities": {}}})
        self.response(1)
        self.send({"method": "initialized", "params": {}})

    def open(self, uri: str, text: str) -> None:
        self.send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "json", "version": 1, "text": text}}})

    def close(self) -> int | str:
        try:
            return self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return "hung"


@pytest.fixture
def client(tmp_path):
    started = Client(tmp_path)
    yield started
    if started.process.poll() is None:
        started.process.kill()


def test_invalid_parameters_get_an_error_and_requests_after_shutdown_get_invalid_request(client, tmp_path):
    client.start(tmp_path)
    client.send({"id": 2, "method": "textDocument/hover", "params": {"nonsense": 1}})
    assert client.response(2)["error"]["code"] == -32602
    client.send({"id": 3, "method": "shutdown"})
    assert "error" not in client.response(3)
    client.send({"id": 4, "method": "textDocument/hover", "params": {
        "textDocument": {"uri": (tmp_path / "x.json").as_uri()}, "position": {"line": 0, "character": 0}}})
    assert client.response(4)["error"]["code"] == -32600
    client.send({"method": "exit"})
    assert client.close() == 0


def test_exit_without_shutdown_ends_with_status_1(client, tmp_path):
    client.start(tmp_path)
    client.send({"method": "exit"})
    assert client.close() == 1


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_a_device_link_and_a_nul_path_never_block_another_documents_diagnostics(client, tmp_path):
    os.mkfifo(tmp_path / "pipe.json")
    os.mkfifo(tmp_path / "launch")  # no suffix: the scope walk reads such files as scripts
    os.symlink("/dev/zero", tmp_path / "zeros.json")
    config = tmp_path / "ds_config.json"
    config.write_text(BAD, encoding="utf-8")
    client.start(tmp_path)
    client.open("file://" + str(tmp_path) + "/bad%00name.json", BAD)
    client.open(config.as_uri(), BAD)
    published = client.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                                and m["params"]["uri"] == config.as_uri(), timeout=30)
    assert any(d.get("code") == "DS101" for d in published["params"]["diagnostics"])
    client.send({"id": 9, "method": "shutdown"})
    client.response(9)
    client.send({"method": "exit"})
    assert client.close() == 0


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads the server's memory from /proc")
def test_memory_stays_flat_over_edits(client, tmp_path):
    config = tmp_path / "ds_config.json"
    config.write_text(BAD, encoding="utf-8")
    client.start(tmp_path)
    client.open(config.as_uri(), BAD)

    def resident() -> int:
        client._read(0.5)
        client.messages.clear()
        with open(f"/proc/{client.process.pid}/status", encoding="ascii") as handle:
            return int(next(line for line in handle if line.startswith("VmRSS")).split()[1])

    def edit(first: int, count: int) -> None:
        for version in range(first, first + count):
            client.send({"method": "textDocument/didChange", "params": {
                "textDocument": {"uri": config.as_uri(), "version": version},
                "contentChanges": [{"text": BAD.replace("8", str(version % 97 + 1))}]}})
            if version % 100 == 0:
                client._read(0)

    edit(2, 500)
    before = resident()
    edit(502, 1500)
    grown = resident() - before
    assert grown < 1500, f"{grown} KB more after 1,500 edits"  # pygls' kept futures made it ~3,600


def test_a_workspace_of_the_filesystem_root_still_answers(client, tmp_path):
    config = tmp_path / "ds_config.json"
    config.write_text(BAD, encoding="utf-8")
    client.send({"id": 1, "method": "initialize", "params": {"processId": None, "rootUri": "file:///",
                                                             "capabilities": {}}})
    client.response(1)
    client.send({"method": "initialized", "params": {}})
    client.open(config.as_uri(), BAD)
    published = client.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics", timeout=30)
    assert any(d.get("code") == "DS101" for d in published["params"]["diagnostics"])


def test_diagnostics_of_unsaved_text_do_not_stay_after_the_file_is_closed(client, tmp_path):
    clean = '{\n  "train_batch_size": 8,\n  "gradient_clipping": 1.0,\n  "zero_optimization": {"stage": 2}\n}\n'
    config = tmp_path / "ds_config.json"
    config.write_text(clean, encoding="utf-8")
    client.start(tmp_path)
    client.open(config.as_uri(), BAD)  # the buffer holds a typo the file on disk does not

    def published() -> list:
        message = client.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                                  and m["params"]["uri"] == config.as_uri())
        client.messages.remove(message)
        return [d.get("code") for d in message["params"]["diagnostics"]]

    assert "DS101" in published()
    client.send({"method": "textDocument/didClose", "params": {"textDocument": {"uri": config.as_uri()}}})
    assert "DS101" not in published()
