"""Axolotl extension points: the keys a `plugins:` entry brings (plugin_keys.py, generated from
axolotl 0.21.0's sources), a plugin shardshift does not know (an info with an UnknownContext), and
unknown keys left empty (an info: nothing is lost) (issue 19, cause 3)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import oracles
from conftest import FIXTURES, ROOT, SHARED, check_json, shown

CONTEXT = FIXTURES / "axolotl" / "context"
WILD = SHARED / "corpus" / "wild"


def _ax001(output):
    return [f for f in output["findings"] if f["code"] == "AX001"]


def test_keys_of_a_listed_plugin_are_known():
    _, output = check_json("--min-severity", "info", str(CONTEXT / "good_plugin.yaml"))
    assert _ax001(output) == []


def test_keys_of_a_plugin_the_file_does_not_list_are_dropped():
    path = CONTEXT / "bad_plugin_not_listed.yaml"
    _, output = check_json(str(path))
    [finding] = _ax001(output)
    assert (finding["severity"], finding["pointer"], finding["file"]) == ("warning", "/liger_rms_norm", shown(path))
    assert "add axolotl.integrations.liger.LigerPlugin to plugins:" in finding["message"]


def test_unknown_plugin_makes_unknown_keys_infos():
    _, output = check_json("--min-severity", "info", str(CONTEXT / "unknown_plugin.yaml"))
    [finding] = _ax001(output)
    assert (finding["severity"], finding["pointer"]) == ("info", "/my_option")
    assert finding["unknown_context"]["kind"] == "extension"
    assert "my_pkg.plugins.MyPlugin" in finding["unknown_context"]["what"]
    assert output["summary"]["unknown_context"] == 1


def test_an_empty_unknown_key_is_only_an_info():
    status, output = check_json(str(CONTEXT / "empty_key.yaml"))
    [finding] = _ax001(output)
    assert (finding["severity"], finding["pointer"]) == ("info", "/debug")
    assert "unknown_context" not in finding and status == 0


def test_a_set_but_unknown_key_is_still_a_warning(tmp_path):
    target = tmp_path / "config.yaml"
    target.write_text((CONTEXT / "empty_key.yaml").read_text().replace("debug:", "debug: true"))
    _, output = check_json(str(target))
    [finding] = _ax001(output)
    assert finding["severity"] == "warning"


def test_plugin_table_matches_the_installed_axolotl():
    oracles.require_installed("axolotl")
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_axolotl_plugins.py"), "--check"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, "plugin_keys.py is out of date: run scripts/gen_axolotl_plugins.py"


CHILD = r"""
import json, logging, sys, warnings
warnings.filterwarnings("ignore")
logging.disable(logging.CRITICAL)
import yaml
from axolotl.utils.config import prepare_plugins, validate_config
from axolotl.utils.dict import DictDefault
cfg = DictDefault(yaml.safe_load(open(sys.argv[1])))
prepare_plugins(cfg)
out = validate_config(cfg)
print(json.dumps({key: out.get(key) for key in sys.argv[2:]}, default=str))
"""


def _validated(path: Path, *keys: str) -> dict:
    """The values Axolotl's schema keeps, with the file's plugins registered (one process per file:
    Axolotl's PluginManager is a singleton)."""
    oracles.require_installed("axolotl", "peft", "addict", "PIL")
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error", PYTHONWARNINGS="ignore")
    done = subprocess.run([sys.executable, "-c", CHILD, str(path), *keys], capture_output=True, text=True,
                          timeout=oracles.CHILD_TIMEOUT, env=env, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.oracle
def test_axolotl_keeps_a_plugin_key_only_when_the_plugin_is_listed():
    assert _validated(CONTEXT / "good_plugin.yaml", "liger_rms_norm") == {"liger_rms_norm": True}
    assert _validated(CONTEXT / "bad_plugin_not_listed.yaml", "liger_rms_norm") == {"liger_rms_norm": None}


@pytest.mark.oracle
def test_axolotl_drops_an_empty_unknown_key():
    assert _validated(CONTEXT / "empty_key.yaml", "debug") == {"debug": None}


@pytest.mark.skipif(not WILD.is_dir(), reason="the wild corpus is not here")
@pytest.mark.parametrize("setup,expected", [
    ("moreWax__llmcompressor-axolotl_workflow", set()),  # llmcompressor: is LLMCompressorPlugin's key
    ("Warrongo__warrungu-trainer", {("info", "/hub_private_repo")}),  # Axolotl pushes privately itself
    ("cloudera__CML_AMP_LLM_Fine_Tuning_Studio", {("info", "/debug")}),  # debug: left empty
    ("modal-labs__llm-finetuning", {("info", "/debug")}),
])
def test_wild_axolotl_setups(setup, expected):
    _, output = check_json("--min-severity", "info", str(WILD / setup))
    assert {(f["severity"], f["pointer"]) for f in _ax001(output)} == expected
