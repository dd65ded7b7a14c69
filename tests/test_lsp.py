"""`shardshift lsp` end to end: the real server process (`python -m shardshift lsp`) driven by
pytest-lsp as an editor drives it, over a temporary copy of fixture files (one server for the
module). The editor must show what `shardshift check` reports for the same files."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import time

import pytest

pytest.importorskip("pygls", reason="the lsp extra (pygls) is not installed")
pytest_lsp = pytest.importorskip("pytest_lsp", reason="pytest-lsp (the test extra) is not installed")

from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

import shardshift  # noqa: E402
from shardshift.lsp import knowledge  # noqa: E402

from conftest import FIXTURES, ROOT  # noqa: E402

WAIT = 30.0  # seconds a published diagnostic may take on a loaded 2-core machine
CONFIG = """[tool.shardshift]
docs-url = "https://docs.example.com/shardshift/"
per-file-ignores = { "ignored/*" = ["DS101"] }
"""
# three safe fixes, one of them found only once the first is made (a key inside a renamed section)
MULTI = ('{\n  "train_batch_size": 32,\n  "zero_optimisation": {"stage": 2, "overlap_com": true},\n'
         '  "fp16": {"enabled": true, "loss_scale_windw": 100}\n}\n')
# a ds_config whose finding (DS101 at "zero_optimisation") follows a character outside the BMP on its line
ROCKET = '{"train_batch_size": 8, "wall_clock_breakdown": "🚀", "zero_optimisation": {"stage": 1}}\n'


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("lsp-workspace")
    (root / ".git").mkdir()  # a repository of its own: nothing above it (no pin, no config) applies
    (root / "pyproject.toml").write_text(CONFIG)
    shutil.copytree(FIXTURES / "setups" / "accelerate_refuses", root / "accelerate")
    shutil.copytree(FIXTURES / "setups" / "accelerate_auto_unfilled", root / "accelerate_auto")
    shutil.copytree(FIXTURES / "megatron" / "branches" / "ds_per_branch", root / "megatron")
    shutil.copy(FIXTURES / "megatron" / "rules" / "MG001" / "bad.sh", root / "megatron" / "mg001.sh")
    (root / "ds").mkdir()
    shutil.copy(FIXTURES / "deepspeed" / "rules" / "DS101" / "bad.json", root / "ds" / "ds101.json")
    shutil.copy(FIXTURES / "deepspeed" / "rules" / "DS101" / "good.json", root / "ds" / "typo.json")
    shutil.copy(FIXTURES / "deepspeed" / "rules" / "DS101" / "bad.json", root / "ds" / "fixme.json")
    (root / "ds" / "rocket.json").write_text(ROCKET, encoding="utf-8")
    (root / "ds" / "multi.json").write_text(MULTI)
    (root / "ignored").mkdir()
    shutil.copy(FIXTURES / "deepspeed" / "rules" / "DS101" / "bad.json", root / "ignored" / "ds_config.json")
    shutil.copytree(FIXTURES / "setups" / "axolotl_mismatch", root / "axolotl")
    (root / "notes.txt").write_text("not a configuration\n")
    return root.resolve()


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(
    server_command=[sys.executable, "-m", "shardshift", "lsp"], server_env=_env()))
async def client(lsp_client: LanguageClient, workspace):
    result = await lsp_client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(
            general=types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf8,
                                                                        types.PositionEncodingKind.Utf16]),
            text_document=types.TextDocumentClientCapabilities(
                hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown]),
                completion=types.CompletionClientCapabilities(completion_item=types.ClientCompletionItemOptions(
                    documentation_format=[types.MarkupKind.Markdown])))),
        root_uri=workspace.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="ws")]))
    lsp_client.result = result
    # every publication, in order (the client keeps only the last per file)
    lsp_client.publications = []
    features = lsp_client.protocol.fm.features
    keep = features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def record(params: types.PublishDiagnosticsParams):
        lsp_client.publications.append((params.uri, params.version, [d.code for d in params.diagnostics]))
        return keep(params)

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = record
    yield
    await lsp_client.shutdown_session()


def _uri(path) -> str:
    return path.as_uri()


async def _published(client: LanguageClient, uri: str, accept=lambda diagnostics: True):
    """The diagnostics published for `uri` once `accept` holds for them."""
    deadline = time.monotonic() + WAIT
    while True:
        found = client.diagnostics.get(uri)
        if found is not None and accept(found):
            return list(found)
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"no accepted diagnostics for {uri}; last: {found}")
        try:
            await asyncio.wait_for(client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), left)
        except asyncio.TimeoutError:
            pass


def _open(client: LanguageClient, path, text: str | None = None, language: str = "json") -> str:
    uri = _uri(path)
    client.diagnostics.pop(uri, None)
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id=language, version=1, text=path.read_text(encoding="utf-8") if text is None else text)))
    return uri


def _change(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))


def _own(diagnostics) -> set[tuple]:
    """(code, line, column, message) of the diagnostics that are the file's own findings."""
    return {(d.code, d.range.start.line + 1, d.range.start.character + 1, d.message.split("\n")[0])
            for d in diagnostics if not d.data["mirror"]}


_CHECKED: dict = {}


def _expected(workspace, path) -> set[tuple]:
    """What `shardshift check <workspace>` reports in `path` (the workspace as on disk)."""
    if workspace not in _CHECKED:
        _CHECKED[workspace] = shardshift.check([str(workspace)], config=str(workspace / "pyproject.toml"))
    return {(f.code, f.line, f.column, f.message + (f" [{f.pointer}]" if f.pointer else ""))
            for f in _CHECKED[workspace].findings if os.path.realpath(f.file) == str(path)}


# The "done when": a ds_config, an Accelerate YAML with its ds_config and a Megatron launch
# script each get in the editor the findings `check` gives for the same files.
CASES = [
    ("ds/ds101.json", "json"),
    ("accelerate/accelerate_config.yaml", "yaml"),
    ("accelerate_auto/bad.json", "json"),  # a ds_config whose findings depend on the YAML that names it
    ("megatron/run.sh", "shellscript"),  # a Megatron launch script and the two ds_configs it chooses between
    ("megatron/mg001.sh", "shellscript"),
]


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize(("name", "language"), CASES, ids=[c[0] for c in CASES])
async def test_the_editor_shows_what_check_reports(client, workspace, name, language):
    path = workspace / name
    uri = _open(client, path, language=language)
    diagnostics = await _published(client, uri)
    expected = _expected(workspace, path)
    assert expected, f"the fixture {name} must have findings for this test to mean anything"
    assert _own(diagnostics) == expected
    for d in diagnostics:
        assert d.source == "shardshift" and d.code_description.href == f"https://docs.example.com/shardshift/rules/{d.code}/"
        assert d.severity in (types.DiagnosticSeverity.Error, types.DiagnosticSeverity.Warning,
                              types.DiagnosticSeverity.Information)


@pytest.mark.asyncio(loop_scope="module")
async def test_a_cross_file_finding_is_shown_in_both_files(client, workspace):
    """Only the ds_config is open: the Accelerate YAML of the workspace that names it is checked with
    it, and the conflict (reported in the YAML) shows in both files, each pointing at the other."""
    yaml_path, ds_path = workspace / "accelerate" / "accelerate_config.yaml", workspace / "accelerate" / "ds_config.json"
    ds_uri = _open(client, ds_path)
    mirrored = await _published(client, ds_uri, lambda ds: any(d.code == "PL001" for d in ds))
    other = next(d for d in mirrored if d.code == "PL001")
    assert other.data["mirror"] and other.severity == types.DiagnosticSeverity.Error
    assert other.related_information[0].location.uri == _uri(yaml_path)
    # the YAML, not open in the editor, gets its finding published as well
    in_yaml = await _published(client, _uri(yaml_path), lambda ds: any(d.code == "PL001" for d in ds))
    conflict = next(d for d in in_yaml if d.code == "PL001")
    assert not conflict.data["mirror"]
    assert [r.location.uri for r in conflict.related_information] == [ds_uri]
    assert other.range.start == conflict.related_information[0].location.range.start
    assert conflict.range.start == other.related_information[0].location.range.start
    assert conflict.message.split("\n")[0].split(" [")[0] in other.message


@pytest.mark.asyncio(loop_scope="module")
async def test_a_ds_config_chosen_by_a_branch_of_a_launch_script_shows_the_script_finding(client, workspace):
    script, ds_big = workspace / "megatron" / "run.sh", workspace / "megatron" / "ds_big.json"
    uri = _open(client, ds_big)
    shown = await _published(client, uri, lambda ds: any(d.code == "PL001" for d in ds))
    mirrored = next(d for d in shown if d.code == "PL001")
    assert mirrored.data["mirror"] and mirrored.related_information[0].location.uri == _uri(script)
    assert _own(shown) == _expected(workspace, ds_big)


@pytest.mark.asyncio(loop_scope="module")
async def test_a_typo_typed_and_removed_updates_the_diagnostics(client, workspace):
    path = workspace / "ds" / "typo.json"
    clean = path.read_text()
    uri = _open(client, path)
    assert not [d for d in await _published(client, uri) if d.code == "DS101"]
    broken = clean.replace('"zero_optimization"', '"zero_optimisation"')
    assert broken != clean
    first = len(client.publications)
    for version, typed in enumerate(("zero_optimizat", "zero_optimizati", "zero_optimizatio"), start=2):
        _change(client, uri, version, clean.replace('"zero_optimization"', f'"{typed}"'))
    _change(client, uri, 5, broken)  # typed within the pause: only the latest version is checked
    found = await _published(client, uri, lambda ds: any(d.code == "DS101" for d in ds))
    assert any("zero_optimisation" in d.message for d in found if d.code == "DS101")
    assert [version for published, version, _ in client.publications[first:] if published == uri] == [5]
    _change(client, uri, 4, clean[:len(clean) // 2])  # half typed: a syntax finding, as check gives
    await _published(client, uri, lambda ds: [d.code for d in ds] == ["SS001"])
    _change(client, uri, 5, clean)
    await _published(client, uri, lambda ds: not any(d.code in ("DS101", "SS001") for d in ds))
    assert path.read_text() == clean  # unsaved text is what was checked; nothing was written


@pytest.mark.asyncio(loop_scope="module")
async def test_a_linked_file_changed_on_disk_updates_the_open_file(client, workspace):
    """The Axolotl YAML is open; its ds_config (not open) is edited by another program and the
    client reports it (workspace/didChangeWatchedFiles): the conflict is gone from the YAML."""
    yaml_path, ds_path = workspace / "axolotl" / "axolotl.yaml", workspace / "axolotl" / "ds_config.json"
    uri = _open(client, yaml_path, language="yaml")
    await _published(client, uri, lambda ds: any(d.code == "PL001" for d in ds))
    before = ds_path.read_text()
    ds_path.write_text(before.replace('"train_micro_batch_size_per_gpu": 4', '"train_micro_batch_size_per_gpu": 2'))
    try:
        client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
            types.FileEvent(uri=_uri(ds_path), type=types.FileChangeType.Changed)]))
        await _published(client, uri, lambda ds: not any(d.code == "PL001" for d in ds))
    finally:
        ds_path.write_text(before)


def _apply(text: str, edits: list[types.TextEdit]) -> str:
    """Apply TextEdits (UTF-16 positions) to `text`."""
    lines = text.split("\n")

    def offset(position: types.Position) -> int:
        before = sum(len(line) + 1 for line in lines[:position.line])
        line, units, index = lines[position.line], 0, 0
        while units < position.character:
            units += 2 if ord(line[index]) > 0xFFFF else 1
            index += 1
        return before + index

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[:offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
    return text


@pytest.mark.asyncio(loop_scope="module")
async def test_the_quick_fix_makes_the_diagnostic_disappear(client, workspace):
    path = workspace / "ds" / "fixme.json"
    text = path.read_text()
    uri = _open(client, path)
    diagnostics = await _published(client, uri, lambda ds: any(d.code == "DS101" for d in ds))
    typo = next(d for d in diagnostics if d.code == "DS101")
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=typo.range,
        context=types.CodeActionContext(diagnostics=[typo])))
    quick = [a for a in actions if a.kind == types.CodeActionKind.QuickFix]
    assert len(quick) == 1 and quick[0].diagnostics[0].code == "DS101"
    assert any(a.kind == types.CodeActionKind.SourceFixAll for a in actions)
    change = quick[0].edit.document_changes[0]
    assert change.text_document.uri == uri and change.text_document.version == 1
    fixed = _apply(text, change.edits)
    assert '"zero_optimization"' in fixed and '"zero_optimisation"' not in fixed
    _change(client, uri, 2, fixed)
    await _published(client, uri, lambda ds: not any(d.code == "DS101" for d in ds))
    assert path.read_text() == text  # the server never writes files


@pytest.mark.asyncio(loop_scope="module")
async def test_fix_all_makes_the_edits_check_fix_writes(client, workspace, tmp_path, capsys):
    from shardshift import cli

    path = workspace / "ds" / "multi.json"
    uri = _open(client, path)
    await _published(client, uri, lambda ds: any(d.code == "DS101" for d in ds))
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=types.Range(
            start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
        context=types.CodeActionContext(diagnostics=[], only=[types.CodeActionKind.SourceFixAll])))
    assert [a.title for a in actions] == ["Fix all safe shardshift findings"]
    fixed = _apply(MULTI, actions[0].edit.document_changes[0].edits)
    copy = tmp_path / "multi.json"
    copy.write_text(MULTI)
    cli.main(["check", "--fix", "--isolated", str(copy)])
    capsys.readouterr()
    assert fixed == copy.read_text() != MULTI
    assert "overlap_comm" in fixed  # the second round's fix, inside the renamed section
    assert path.read_text() == MULTI


@pytest.mark.asyncio(loop_scope="module")
async def test_a_code_action_for_a_diagnostic_it_did_not_make_answers_without_it(client, workspace):
    path = workspace / "ds" / "ds101.json"
    uri = _open(client, path)
    typo = next(d for d in await _published(client, uri, lambda ds: any(d.code == "DS101" for d in ds))
                if d.code == "DS101")
    forged = [types.Diagnostic(range=typo.range, message="x", source="shardshift", code="DS101", data=data)
              for data in ({"fix_kind": "rename-key", "fix": 3, "pointer": None}, {"fix_kind": "delete-file"},
                           "not an object", {"fix_kind": "rename-key", "fix": "x", "pointer": "/no/such/key"})]
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=typo.range,
        context=types.CodeActionContext(diagnostics=forged, only=[types.CodeActionKind.QuickFix])))
    assert list(actions) == []
    assert not [m for m in client.log_messages if m.type == types.MessageType.Error]


@pytest.mark.asyncio(loop_scope="module")
async def test_positions_are_utf16_on_a_line_with_a_non_bmp_character(client, workspace):
    assert client.result.capabilities.position_encoding == types.PositionEncodingKind.Utf16
    path = workspace / "ds" / "rocket.json"
    uri = _open(client, path)
    diagnostics = await _published(client, uri, lambda ds: any(d.code == "DS101" for d in ds))
    typo = next(d for d in diagnostics if d.code == "DS101" and "zero_optimisation" in d.message)
    column = ROCKET.index('"zero_optimisation"')  # code points before the key, 0-based
    assert typo.range.start.character == column + 1  # the rocket is two UTF-16 code units
    assert typo.range.end.character == column + 1 + len('"zero_optimisation"')


@pytest.mark.asyncio(loop_scope="module")
async def test_the_workspace_configuration_applies(client, workspace):
    path = workspace / "ignored" / "ds_config.json"
    uri = _open(client, path)
    diagnostics = await _published(client, uri)
    assert not any(d.code == "DS101" for d in diagnostics)
    assert _own(diagnostics) == _expected(workspace, path)


@pytest.mark.asyncio(loop_scope="module")
async def test_a_file_that_is_no_configuration_gets_no_diagnostics(client, workspace):
    uri = _open(client, workspace / "notes.txt", language="plaintext")
    assert await _published(client, uri) == []


@pytest.mark.asyncio(loop_scope="module")
async def test_hover_and_completion_answer_what_the_knowledge_module_gives(client, workspace):
    path = workspace / "accelerate" / "ds_config.json"
    text = path.read_text()
    uri = _open(client, path)
    line = next(n for n, row in enumerate(text.split("\n")) if '"' in row)
    character = text.split("\n")[line].index('"') + 2
    where = types.TextDocumentPositionParams(text_document=types.TextDocumentIdentifier(uri=uri),
                                             position=types.Position(line=line, character=character))
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=where.text_document, position=where.position))
    direct = knowledge.hover(str(path), text, line, character)
    assert direct is not None and hover is not None
    assert hover.contents.kind == types.MarkupKind.Markdown and hover.contents.value == direct.markdown
    assert (hover.range.start.line, hover.range.start.character) == (direct.span.line, direct.span.character)
    completion = await client.text_document_completion_async(types.CompletionParams(
        text_document=where.text_document, position=where.position))
    items = completion.items if isinstance(completion, types.CompletionList) else completion or []
    expected = knowledge.complete(str(path), text, line, character)
    assert [(i.label, i.insert_text) for i in items] == [(e.label, e.insert_text) for e in expected]


@pytest.mark.asyncio(loop_scope="module")
async def test_a_completed_flag_replaces_what_is_typed_of_it(client, workspace):
    # `-` is no word character for most clients: the item's edit must cover all of `--tensor-m`
    path = workspace / "unsaved" / "half_typed.sh"  # never on disk: the other tests check the whole workspace
    text = "#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2 --tensor-m\n"
    uri = _open(client, path, text, language="shellscript")
    line = 1
    character = len(text.split("\n")[line])
    completion = await client.text_document_completion_async(types.CompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=character)))
    items = completion.items if isinstance(completion, types.CompletionList) else completion or []
    assert items and items[0].text_edit is not None
    edit = items[0].text_edit
    row = text.split("\n")[line]
    completed = row[:edit.range.start.character] + edit.new_text + row[edit.range.end.character:]
    assert completed.endswith(" --tensor-model-parallel-size"), completed
    assert completed.count("--tensor") == 1


def test_positions_convert_between_code_points_and_the_negotiated_units():
    from shardshift.lsp import server

    lines = ['{"a": "🚀", "b": 1}']
    at_b = lines[0].index('"b"')
    utf16, utf32, utf8 = (types.PositionEncodingKind.Utf16, types.PositionEncodingKind.Utf32,
                          types.PositionEncodingKind.Utf8)
    assert server.to_client(lines, 0, at_b, utf16).character == at_b + 1
    assert server.to_client(lines, 0, at_b, utf32).character == at_b
    assert server.to_client(lines, 0, at_b, utf8).character == at_b + 3
    for encoding in (utf16, utf32, utf8):
        assert server.from_client(lines, server.to_client(lines, 0, at_b, encoding), encoding) == (0, at_b)
    assert server.choose_encoding([utf8, utf16, utf32]) == utf32
    assert server.choose_encoding([utf8, utf16]) == utf16 and server.choose_encoding(None) == utf16


def test_without_the_lsp_extra_the_command_says_how_to_install_it(monkeypatch, capsys):
    import importlib.util

    from shardshift import cli

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pygls" else real(name, *a))
    assert cli.main(["lsp"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "shardshift: the language server needs the lsp extra: pip install 'shardshift[lsp]'"


# Folders whose files link across the folder in the ways the scope must follow: an absolute path
# from another machine (resolved by its suffix), a launch script -> its Accelerate YAML -> the
# ds_config (two steps back from the ds_config), a YAML whose ds_config is read by a Trainer script.
LINKED = [FIXTURES / "setups" / "consumers" / "absolute_path", FIXTURES / "launch" / "accelerate" / "bad",
          FIXTURES / "setups" / "accelerate_auto_unfilled", FIXTURES / "setups" / "axolotl_mismatch"]


@pytest.mark.parametrize("folder", LINKED, ids=[f"{p.parent.name}/{p.name}" for p in LINKED])
def test_the_setup_checked_for_a_file_gives_its_findings_of_a_check_of_the_whole_folder(tmp_path, folder):
    """What the server checks for an opened file (its setup, not the workspace) finds in that file
    exactly what `shardshift check <workspace>` finds there."""
    root = tmp_path / folder.name
    shutil.copytree(folder, root)
    _compare_with_the_whole_folder(root)


AUTO = '{"train_micro_batch_size_per_gpu": "auto", "gradient_clipping": "auto", "zero_optimization": {"stage": 2}}\n'


def test_a_path_from_another_machine_that_two_ds_configs_end_equally_names_neither(tmp_path):
    """`/workspace/x/configs/ds.json` in a YAML names a/configs/ds.json or b/configs/ds.json: a check
    of the folder cannot tell (both end that way), so neither has a reader and each "auto" is
    reported (DS420); the setup of one of them alone must not take the YAML as its reader."""
    root = tmp_path / "two"
    for side in ("a", "b"):
        (root / side / "configs").mkdir(parents=True)
        (root / side / "configs" / "ds.json").write_text(AUTO)
    (root / "c").mkdir()
    (root / "c" / "axolotl.yml").write_text("base_model: org/model\nmicro_batch_size: 2\n"
                                            "deepspeed: /workspace/x/configs/ds.json\n")
    whole = _compare_with_the_whole_folder(root)
    assert {f.code for f in whole.findings if f.file.endswith("ds.json")} >= {"DS420"}


def _compare_with_the_whole_folder(root):
    from shardshift.check import discover, load
    from shardshift.lsp import server

    (root / ".git").mkdir()
    root = root.resolve()
    whole = shardshift.check([str(root)], isolated=True)
    state = server.Workspace(root=str(root))
    compared = 0
    for path, _ in discover([str(root)]):
        if load(path, explicit=False) is None:
            continue
        _, findings = server.setup_findings(state, path)
        mine = {(f.code, f.line, f.column, f.message) for f in findings if os.path.realpath(f.file) == path}
        wanted = {(f.code, f.line, f.column, f.message) for f in whole.findings if os.path.realpath(f.file) == path}
        assert mine == wanted, path
        compared += bool(wanted)
    assert compared, "the folder must have findings for this test to mean anything"
    return whole


def test_the_workspace_min_severity_hides_infos_as_check_does(tmp_path):
    from shardshift.lsp import server

    root = tmp_path / "ws"
    shutil.copytree(FIXTURES / "megatron" / "branches" / "ds_per_branch", root)
    (root / ".git").mkdir()
    root = root.resolve()
    script = str(root / "run.sh")
    scope = server.scope_of(server.Workspace(root=str(root)), script)
    shown, _, _ = server.run_scope(scope, str(root))
    assert {f.severity for f in shown} == {"info"}  # the branch-dependent PL001
    (root / "shardshift.toml").write_text('min-severity = "warning"\n')
    assert server.run_scope(scope, str(root))[0] == []
    assert shardshift.check([str(root)], config=str(root / "shardshift.toml")).findings == []
