"""torchtitan extension points: a custom config module and a vendored torchtitan copy change the key
table TT001/TT002/TT003 judge a TOML with; when the module or copy is not in the checked tree, the
findings are infos with an UnknownContext (issue 19, cause 3)."""

from __future__ import annotations

import pytest

from conftest import FIXTURES, SHARED, check_json, run_cli, shown

CONTEXT = FIXTURES / "torchtitan" / "context"
WILD = SHARED / "corpus" / "wild"


def _titan(output, path=None):
    return [f for f in output["findings"] if f["code"].startswith("TT") and (path is None or f["file"] == shown(path))]


@pytest.mark.parametrize("fixture", ["custom_module/good.toml", "vendored/torchtitan/models/llama3/train_configs/good.toml",
                                     "vendored_old/good.toml"])
def test_keys_of_the_module_or_copy_are_accepted(fixture):
    _, output = check_json("--min-severity", "info", str(CONTEXT / fixture))
    assert _titan(output) == []


def test_custom_module_keys_are_judged_with_the_module():
    path = CONTEXT / "custom_module" / "bad.toml"
    _, output = check_json(str(path))
    [finding] = _titan(output)
    assert (finding["code"], finding["severity"], finding["pointer"], finding["fix"]) == (
        "TT001", "error", "/eval/guidance_scal", "guidance_scale")
    assert "<class 'my_ext.args.Eval'>" in finding["message"]
    assert "unknown_context" not in finding


def test_the_custom_module_extends_only_its_sections():
    # the module's [training] adds img_size; a typo in a torchtitan key of [training] is still refused,
    # and torchtitan names the merged class
    path = CONTEXT / "custom_module" / "good.toml"
    text = path.read_text().replace("local_batch_size", "local_batch_sise")
    target = path.with_name("tmp_typo.toml")
    target.write_text(text)
    try:
        _, output = check_json(str(target))
    finally:
        target.unlink()
    [finding] = _titan(output)
    assert finding["pointer"] == "/training/local_batch_sise" and finding["severity"] == "error"
    assert "MergedTraining" in finding["message"]


def test_missing_custom_module_makes_unknown_keys_infos():
    path = CONTEXT / "custom_missing" / "config.toml"
    _, output = check_json("--min-severity", "info", str(path))
    found = _titan(output)
    assert sorted(f["pointer"] for f in found) == ["/eval", "/training/img_size"]
    for finding in found:
        assert finding["severity"] == "info"
        assert finding["unknown_context"]["kind"] == "extension"
        assert "not_here.args" in finding["unknown_context"]["what"]
        assert "not_here/args.py" in finding["unknown_context"]["how"]
    assert output["summary"]["unknown_context"] == 2


def test_vendored_copy_refuses_what_it_lacks():
    path = CONTEXT / "vendored" / "torchtitan" / "models" / "llama3" / "train_configs" / "bad.toml"
    _, output = check_json(str(path))
    [finding] = _titan(output)
    assert (finding["code"], finding["severity"], finding["pointer"]) == ("TT001", "error", "/compile")
    assert "vendored torchtitan copy (torchtitan/config/job_config.py)" in finding["message"]


def test_old_vendored_copy_drops_unknown_keys_silently():
    path = CONTEXT / "vendored_old" / "bad.toml"
    _, output = check_json(str(path))
    [finding] = _titan(output)
    assert (finding["code"], finding["severity"], finding["fix"]) == ("TT001", "warning", "batch_size")
    assert "drops the key silently" in finding["message"]


def test_toml_in_a_vendored_tree_without_its_config_module_is_info():
    path = CONTEXT / "vendored_missing" / "torchtitan" / "models" / "llama3" / "train_configs" / "config.toml"
    _, output = check_json("--min-severity", "info", str(path))
    found = _titan(output)
    assert {(f["code"], f["pointer"]) for f in found} == {("TT003", "/training/batch_size"), ("TT001", "/training/seed")}
    assert all(f["severity"] == "info" and f["unknown_context"]["kind"] == "release" for f in found)
    # no error or warning rests on the unknown copy: the run passes
    status, plain = check_json(str(path))
    assert status == 0 and plain["summary"]["errors"] == plain["summary"]["warnings"] == 0


def test_text_output_says_what_is_unknown_and_how_to_tell():
    done = run_cli("check", "--min-severity", "info", str(CONTEXT / "custom_missing" / "config.toml"))
    assert "unknown extension: the custom config module not_here.args is not in the checked tree" in done.stdout
    assert "check the repository that holds not_here/args.py" in done.stdout


def test_unreadable_custom_module_is_unknown_not_a_crash(tmp_path):
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "args.py").write_text("def (:\n")
    (tmp_path / "config.toml").write_text('[job]\ncustom_config_module = "broken.args"\n[eval]\nx = 1\n')
    _, output = check_json("--min-severity", "info", str(tmp_path / "config.toml"))
    [finding] = _titan(output)
    assert finding["severity"] == "info" and finding["unknown_context"]["kind"] == "extension"


@pytest.mark.skipif(not WILD.is_dir(), reason="the wild corpus is not here")
@pytest.mark.parametrize("setup,expected", [
    # the vendored copy + llm_argparser.py: only the real silent drops remain ([data], a misspelt eval key)
    ("DidulaThavisha__distributed_training_practice", {("TT001", "warning", "/data"),
                                                       ("TT001", "warning", "/eval/classifer_free_guidance_scale")}),
    ("basetenlabs__kingkong", set()),  # the fork's job_config.py has model.args
    ("facebookresearch__MuLoCo", set()),  # the fork's config_manager.py has the DiLoCo keys
    ("hitkumar__llms", set()),  # the argparse-era copy reads the TOML as a plain dict
])
def test_wild_setups_are_judged_by_their_own_torchtitan(setup, expected):
    _, output = check_json("--min-severity", "info", str(WILD / setup))
    assert {(f["code"], f["severity"], f["pointer"]) for f in _titan(output)} == expected
