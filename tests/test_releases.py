"""Issue 19, cause 4: the framework release a repository runs, read from its dependency files
(src/shardshift/context/releases.py), the options that give it, and what the report says."""

from __future__ import annotations

from pathlib import Path

import pytest

from shardshift.context.releases import detect, resolve

from conftest import FIXTURES, SHARED, check_json, run_cli

WILD = SHARED / "corpus" / "wild"
RELEASES = FIXTURES / "context" / "releases"

# Every `deps` row of ../shared/corpus/wild/SOURCES.tsv, as its notes say: (setup, folder the walk
# starts in, framework) -> (version, where) or None when the notes say nothing is pinned there.
WILD_PINS = {
    ("01-ai__Yi", "", "deepspeed"): ("0.12.2", "conda-lock.yml"),  # the lock wins over requirements' range
    ("01-ai__Yi", "", "torch"): ("2.0.1", "conda-lock.yml"),
    ("01-ai__Yi", "", "transformers"): ("4.36.0", "conda-lock.yml"),
    ("01-ai__Yi", "", "accelerate"): ("0.24.1", "conda-lock.yml"),
    ("AbeerMostafa__Novelty-Reviewer", "", "axolotl"): ("0.12.2", "requirements.txt"),
    ("AbeerMostafa__Novelty-Reviewer", "", "accelerate"): ("1.10.0", "requirements.txt"),
    ("AbeerMostafa__Novelty-Reviewer", "", "deepspeed"): ("0.18.0", "requirements.txt"),
    ("AbeerMostafa__Novelty-Reviewer", "", "transformers"): ("4.55.2", "requirements.txt"),
    ("AbeerMostafa__Novelty-Reviewer", "", "torch"): ("2.6.0", "requirements.txt"),  # 2.6.0+cu124
    ("alibaba__Megatron-LLaMA", "", "torch"): None,
    ("alibaba__Megatron-LLaMA", "", "megatron-core"): None,
    ("axolotl-ai-cloud__axolotl-cookbook", "lambda", "axolotl"): None,  # axolotl main, from git
    ("baichuan-inc__Baichuan2", "fine-tune", "torch"): ("2.0.0", "fine-tune/requirements.txt"),
    ("baichuan-inc__Baichuan2", "fine-tune", "deepspeed"): None,
    ("baichuan-inc__Baichuan2", "fine-tune", "transformers"): None,
    ("basetenlabs__kingkong", "torchtitan", "torchtitan"): ("0.2.1", "assets/version.txt"),  # the fork's own version
    ("bigohofone__assignment1-basics-solution", "", "deepspeed"): ("0.18.6", "uv.lock"),
    ("bigohofone__assignment1-basics-solution", "", "torch"): ("2.6.0", "uv.lock"),  # 2.2.2 only on Intel macs
    ("cloudera__CML_AMP_LLM_Fine_Tuning_Studio", "", "torch"): ("2.3.1", None),
    ("cloudera__CML_AMP_LLM_Fine_Tuning_Studio", "", "accelerate"): ("0.33.0", None),
    ("cloudera__CML_AMP_LLM_Fine_Tuning_Studio", "", "transformers"): ("4.44.0", None),
    ("cloudera__CML_AMP_LLM_Fine_Tuning_Studio", "", "axolotl"): None,  # its git pin is commented out
    ("codefuse-ai__MFTCoder", "", "torch"): ("2.1.0", "requirements.txt"),
    ("codefuse-ai__MFTCoder", "", "deepspeed"): ("0.14.0", "requirements.txt"),
    ("codefuse-ai__MFTCoder", "", "transformers"): ("4.44.2", "requirements.txt"),
    ("codefuse-ai__MFTCoder", "", "accelerate"): ("0.31.0", "requirements.txt"),
    ("CoinCheung__gdGPT", "configs", "deepspeed"): ("0.11.1", "deepspeed/git_version_info_installed.py"),
    ("DidulaThavisha__distributed_training_practice", "", "torch"): None,
    ("facebookresearch__lingua", "", "torch"): ("2.7.0", "setup/create_env.sh"),
    ("facebookresearch__MuLoCo", "torchtitan", "torch"): None,
    ("FlagAlpha__Llama2-Chinese", "", "deepspeed"): ("0.10.0", "docker/Dockerfile_train"),  # commented out in requirements
    ("FlagAlpha__Llama2-Chinese", "", "transformers"): ("4.31.0", None),
    ("FlagAlpha__Llama2-Chinese", "", "accelerate"): ("0.21.0", None),
    ("FlagAlpha__Llama2-Chinese", "", "torch"): ("2.0.1", "docker/Dockerfile_train"),  # the pytorch/pytorch image
    ("FlagOpen__FlagScale", "", "transformers"): ("4.51.0", "requirements/train/megatron/requirements-cuda.txt"),
    ("FlagOpen__FlagScale", "", "megatron-core"): None,  # a git submodule on a branch
    ("FSoft-AI4Code__XMainframe", "", "accelerate"): ("0.33.0", "requirements.txt"),
    ("FSoft-AI4Code__XMainframe", "", "deepspeed"): ("0.12.2", "requirements.txt"),
    ("FSoft-AI4Code__XMainframe", "", "torch"): ("2.4.0", "requirements.txt"),
    ("FSoft-AI4Code__XMainframe", "", "transformers"): ("4.40.2", "requirements.txt"),
    ("HabanaAI__Megatron-DeepSpeed", "megatron/core", "torch"): None,
    ("hitkumar__llms", "torchtitan", "torch"): None,
    ("HuangLK__transpeeder", "", "deepspeed"): None,  # a personal fork from git
    ("HuangLK__transpeeder", "", "transformers"): ("5.24.0", "requirements.txt"),  # >=4.31.0: the newest allowed
    ("InternLM__InternLM", "", "torch"): ("1.13.1", "requirements/torch.txt"),
    ("LinB203__FSDP-Training", "", "torch"): ("2.8.0", "requirements.txt"),
    ("LinB203__FSDP-Training", "", "transformers"): ("4.55.2", "requirements.txt"),
    ("LumiOpen__Megatron-DeepSpeed", "", "torch"): None,
    ("LumiOpen__Megatron-DeepSpeed", "", "deepspeed"): None,
    ("lzzmm__reft_ds", "Megatron-DeepSpeed", "deepspeed"): ("0.12.4", "DeepSpeed/version.txt"),  # the vendored tree
    ("meta-pytorch__torchforge", "", "torch"): ("2.9.0", "pyproject.toml"),
    ("meta-pytorch__torchforge", "", "torchtitan"): ("0.2.0", "pyproject.toml"),
    ("Miraclove__DevAssistant", "dev-assistant-model/deepspeed/pretrain", "transformers"): (
        "4.28.1", "dev-assistant-model/deepspeed/pretrain/requirements.txt"),
    ("Miraclove__DevAssistant", "dev-assistant-model/deepspeed/pretrain", "deepspeed"): (
        "0.9.1", "dev-assistant-model/deepspeed/pretrain/requirements.txt"),
    ("Miraclove__DevAssistant", "dev-assistant-model/deepspeed/pretrain", "accelerate"): (
        "0.18.0", "dev-assistant-model/deepspeed/pretrain/requirements.txt"),
    ("modal-labs__llm-finetuning", "", "axolotl"): None,  # a Docker image of axolotl main
    ("Modalities__modalities", "", "torch"): ("2.10.0", "pyproject.toml"),  # >=2.10,<2.11.0
    ("moreWax__llmcompressor-axolotl_workflow", "", "axolotl"): None,  # git main
    ("NovaSky-AI__SkyRL", "", "torch"): ("2.11.0", "pyproject.toml"),
    ("NovaSky-AI__SkyRL", "", "transformers"): ("5.8.0", "pyproject.toml"),  # >=5.6.1,<=5.8.0
    ("OpenBMB__MiniCPM", "finetune", "deepspeed"): ("0.19.8", "finetune/requirements.txt"),  # >=0.13.1
    ("OpenBMB__MiniCPM", "finetune", "transformers"): None,
    ("OpenBMB__MiniCPM", "finetune", "torch"): None,
    ("OpenLMLab__MOSS", "", "torch"): ("1.13.1", "requirements.txt"),
    ("OpenLMLab__MOSS", "", "transformers"): ("4.25.1", "requirements.txt"),
    ("OpenLMLab__MOSS", "", "accelerate"): None,
    ("OpenLMLab__MOSS", "", "deepspeed"): None,
    ("OptimalScale__LMFlow", "", "accelerate"): ("1.15.0", "requirements.txt"),  # >=0.27.2
    ("OptimalScale__LMFlow", "", "transformers"): ("5.24.0", "requirements.txt"),
    ("OptimalScale__LMFlow", "", "torch"): ("2.13.0", "requirements.txt"),
    ("OptimalScale__LMFlow", "", "deepspeed"): ("0.19.8", "setup.py"),  # extras_require deepspeed>=0.14.4
    ("princeton-nlp__SimPO", "", "accelerate"): ("0.29.2", "environment.yml"),
    ("princeton-nlp__SimPO", "", "deepspeed"): ("0.12.2", "environment.yml"),
    ("princeton-nlp__SimPO", "", "torch"): ("2.2.2", "environment.yml"),
    ("princeton-nlp__SimPO", "", "transformers"): ("4.44.2", "environment.yml"),
    ("shibing624__MedicalGPT", "", "transformers"): ("5.24.0", "requirements.txt"),  # >=5.6.0
    ("shibing624__MedicalGPT", "", "deepspeed"): None,
    ("tatsu-lab__alpaca_farm", "", "accelerate"): ("0.20.0", "requirements.txt"),  # >=0.18.0,<=0.20.0
    ("tatsu-lab__alpaca_farm", "", "transformers"): ("4.29.2", "requirements.txt"),
    ("tatsu-lab__alpaca_farm", "", "torch"): ("2.13.0", "requirements.txt"),  # >=1.13.1
    ("THUDM__ChatGLM2-6B", "", "transformers"): ("4.30.2", "requirements.txt"),
    ("THUDM__ChatGLM2-6B", "", "torch"): ("2.13.0", "requirements.txt"),  # >=2.0
    ("THUDM__ChatGLM2-6B", "", "deepspeed"): None,
    ("uclaml__SPIN", "", "accelerate"): ("0.23.0", "setup.py"),
    ("uclaml__SPIN", "", "deepspeed"): ("0.12.2", "setup.py"),
    ("uclaml__SPIN", "", "torch"): ("2.1.0", "setup.py"),
    ("uclaml__SPIN", "", "transformers"): ("4.37.0", "setup.py"),
    ("vllm-project__speculators", "", "torch"): ("2.13.0", "pyproject.toml"),  # >=2.9.0,<=2.13.0
    ("vllm-project__speculators", "", "transformers"): ("5.15.1", "pyproject.toml"),  # >=4.56.1,<5.16.0
    ("Warrongo__warrungu-trainer", "", "axolotl"): ("0.9.0", "requirements.txt"),
    ("Warrongo__warrungu-trainer", "", "transformers"): ("4.51.3", "requirements.txt"),
    ("Warrongo__warrungu-trainer", "", "accelerate"): ("1.6.0", "requirements.txt"),
    ("Warrongo__warrungu-trainer", "", "deepspeed"): ("0.16.9", "requirements.txt"),
    ("yandex__YaLM-100B", "", "deepspeed"): ("0.6.5", "docker/Dockerfile"),
    ("yangjianxin1__Firefly", "", "deepspeed"): ("0.9.5", "requirements.txt"),
    ("yangjianxin1__Firefly", "", "transformers"): ("4.34", "requirements.txt"),
    ("yangjianxin1__Firefly", "", "accelerate"): ("0.21.0", "requirements.txt"),
    ("yangjianxin1__Firefly", "", "torch"): ("1.13.1", "requirements.txt"),
    ("yyDing1__SCAN-PRM", "", "deepspeed"): None,
    ("yyDing1__SCAN-PRM", "", "transformers"): None,
    ("yyDing1__SCAN-PRM", "", "torch"): None,
}


def _deps_rows() -> set[str]:
    rows = set()
    for line in (WILD / "SOURCES.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        cells = line.split("\t")
        if len(cells) > 5 and cells[5] == "deps":
            rows.add(cells[0].split("/", 1)[0])
    return rows


@pytest.mark.skipif(not WILD.is_dir(), reason="../shared/corpus/wild is not present")
def test_every_deps_row_of_the_wild_folder_is_in_the_table():
    assert _deps_rows() - {setup for setup, _, _ in WILD_PINS} == set()


@pytest.mark.skipif(not WILD.is_dir(), reason="../shared/corpus/wild is not present")
@pytest.mark.parametrize("key", sorted(WILD_PINS), ids=["/".join(k).replace("//", "/") for k in sorted(WILD_PINS)])
def test_the_pin_each_wild_repository_gives_is_found(key):
    setup, folder, framework = key
    top = WILD / setup
    release = detect(framework, str(top / folder / "train.yaml"), (str(top),))
    expected = WILD_PINS[key]
    if expected is None:
        # no version: nothing at all, or a listing / install without a version or from a fork (issue 30)
        assert release.version is None and (release.source == "no pin found" or release.basis), release
        return
    version, where = expected
    assert release.version == tuple(int(p) for p in version.split(".")), release
    if where is not None:
        assert release.source.rsplit(":", 1)[0] == where, release
    assert release.detail  # the pin as written


@pytest.mark.skipif(not WILD.is_dir(), reason="../shared/corpus/wild is not present")
def test_a_wild_repository_never_sees_its_siblings(tmp_path):
    # the wild folder itself is walked to only when it is the tree given; no sibling's pins leak in
    release = detect("axolotl", str(WILD / "moreWax__llmcompressor-axolotl_workflow" / "x.yaml"), (str(WILD),))
    # its own install.sh clones axolotl's default branch (unpinned); nothing of a sibling's
    assert release.version is None and release.source.startswith("moreWax__llmcompressor-axolotl_workflow/")


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / ".git").mkdir(parents=True)
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_nearer_file_wins_and_a_lock_wins_over_a_range(tmp_path):
    root = _repo(tmp_path, {"requirements.txt": "deepspeed==0.14.0\n",
                            "sub/requirements.txt": "numpy\ndeepspeed>=0.15,<0.16\n",
                            "sub/poetry.lock": '[[package]]\nname = "deepspeed"\nversion = "0.15.2"\n',
                            "other/requirements.txt": "deepspeed==0.10.0\n"})
    assert detect("deepspeed", str(root / "x.json")).text() == "deepspeed 0.14.0 (requirements.txt:1)"
    assert detect("deepspeed", str(root / "sub" / "x.json")).text() == "deepspeed 0.15.2 (sub/poetry.lock:2)"
    # without the lock the range gives the newest release it allows
    (root / "sub" / "poetry.lock").unlink()
    assert detect("deepspeed", str(root / "sub" / "deeper" / "x.json")).text() == "deepspeed 0.15.4 (sub/requirements.txt:2)"


def test_the_walk_stops_at_the_repository_root(tmp_path):
    (tmp_path / "requirements.txt").write_text("axolotl==0.9.0\n")
    inner = _repo(tmp_path / "inner", {"config.yml": "base_model: x\n"})
    assert detect("axolotl", str(inner / "config.yml")).source == "no pin found"


def test_the_framework_image_tag_is_a_pin(tmp_path):
    """Axolotl's image tag names its release (and torch's at the end): read from a Dockerfile, a compose
    file and a Python job definition; a `main-...` tag names a branch build, no release; a directory's many
    Python files never crowd its requirements file out."""
    root = _repo(tmp_path, {
        "modal/job.py": 'import modal\nimage = modal.Image.from_registry("axolotlai/axolotl:0.8.1-py3.11-cu124-2.5.1")\n',
        "compose/docker-compose.yml": "services:\n  train:\n    image: axolotlai/axolotl:0.10.0\n",
        "docker/Dockerfile": "FROM winglian/axolotl:main-py3.10-cu118-2.0.1\n",
        "many/requirements.txt": "axolotl==0.9.2\n",
        **{f"many/a{i:02}.py": "print(1)\n" for i in range(45)}})
    assert detect("axolotl", str(root / "modal" / "c.yml")).text() == "axolotl 0.8.1 (modal/job.py:2)"
    assert detect("torch", str(root / "modal" / "c.yml")).text() == "torch 2.5.1 (modal/job.py:2)"
    assert detect("axolotl", str(root / "compose" / "c.yml")).text() == "axolotl 0.10.0 (compose/docker-compose.yml:3)"
    # a branch tag names a build of an unknown commit: no release, and no "newest" either
    branch = detect("axolotl", str(root / "docker" / "c.yml"))
    assert (branch.version, branch.basis, branch.source) == (None, "build", "docker/Dockerfile:1")
    assert branch.text().startswith("a branch build of axolotl")
    assert detect("torch", str(root / "docker" / "c.yml")).text() == "torch 2.0.1 (docker/Dockerfile:1)"
    assert detect("axolotl", str(root / "many" / "c.yml")).text() == "axolotl 0.9.2 (many/requirements.txt:1)"

def test_package_names_are_normalised_and_conda_pytorch_is_torch(tmp_path):
    root = _repo(tmp_path, {"environment.yml": "dependencies:\n  - pytorch=2.1.2=py3.10_cuda12.1_0\n"
                                               "  - pip:\n    - Megatron_Core==0.8.0\n",
                            "pyproject.toml": '[tool.poetry.dependencies]\naxolotl = "^0.12.0"\n'})
    assert detect("torch", str(root / "a")).text() == "torch 2.1.2 (environment.yml:2)"
    assert detect("megatron-core", str(root / "a")).text() == "megatron-core 0.8.0 (environment.yml:4)"
    assert detect("axolotl", str(root / "a")).text() == "axolotl 0.12.2 (pyproject.toml:2)"  # ^0.12.0: <0.13


def test_a_range_beyond_the_known_releases_is_said_as_written(tmp_path):
    root = _repo(tmp_path, {"requirements.txt": "torchtitan>=0.9\n"})
    release = detect("torchtitan", str(root / "a.toml"))
    assert (release.version, release.source) == (None, "requirements.txt:1")
    assert "torchtitan>=0.9" in release.detail and "no release shardshift knows" in release.detail


@pytest.mark.parametrize("spec, version", [
    ("==2.6.0+cu124", (2, 6, 0)), (">=4.26.0,<=4.29.2", (4, 29, 2)), ("~=0.12.0", (0, 12, 2)),
    (">= 4.31.0, < 4.32", (4, 31, 0)), ("==0.19.*", (0, 19, 0)), ("<0.10.0", (0, 9, 2))])
def test_specifiers(spec, version):
    assert resolve("axolotl" if spec in ("~=0.12.0", "<0.10.0") else
                   "torchtitan" if spec == "==0.19.*" else "transformers" if "4." in spec else "torch", spec) == (
        version if spec != "==0.19.*" else None)


def test_a_broken_dependency_file_is_no_pin_and_no_traceback(tmp_path):
    root = _repo(tmp_path, {"pyproject.toml": "[project\ndependencies = [", "setup.py": "setup(install_requires=[",
                            "requirements.txt": "-r missing.txt\n-r requirements.txt\ntorch==\n"})
    assert detect("torch", str(root / "a")).source == "no pin found"


# --- the fixtures: a renamed torchtitan key judged by the release in the fixture's own tree ---------


def _tt003(case: str) -> list[dict]:
    _, output = check_json("--isolated", "--min-severity", "info", str(RELEASES / case))
    return [f for f in output["findings"] if f["code"] == "TT003"]


def test_a_renamed_torchtitan_key_with_an_old_pin_is_clean():
    assert _tt003("torchtitan_old_pin") == []


def test_a_renamed_torchtitan_key_with_a_new_pin_is_an_error_naming_the_pin():
    found = _tt003("torchtitan_new_pin")
    assert [f["severity"] for f in found] == ["error", "error"]
    assert "torchtitan 0.2.1 (requirements.txt:2) refuses training.compile" in found[0]["message"]


def test_a_renamed_torchtitan_key_without_a_pin_says_from_which_release():
    # releases before 0.2.0 read the old spelling: with no pin the release premise is unknown (issue 30)
    found = _tt003("torchtitan_no_pin")
    assert [f["severity"] for f in found] == ["info", "info"]
    assert found[0]["unknown_context"]["kind"] == "release"
    assert "from torchtitan 0.2.0 ConfigManager refuses training.compile" in found[0]["message"]
    assert "judged by the newest torchtitan, 0.2.2" in found[0]["message"]


def test_a_pin_the_table_does_not_cover_is_an_info_that_says_so():
    found = _tt003("torchtitan_uncovered_pin")
    assert [f["severity"] for f in found] == ["info", "info"]
    assert found[0]["unknown_context"]["kind"] == "release"
    assert "older than the torchtitan releases" in found[0]["unknown_context"]["what"]


def test_the_option_wins_over_the_pin():
    _, output = check_json("--isolated", "--torchtitan-version", "0.2.0", str(RELEASES / "torchtitan_old_pin"))
    found = [f for f in output["findings"] if f["code"] == "TT003"]
    assert len(found) == 2 and "torchtitan 0.2.0 (--torchtitan-version) refuses" in found[0]["message"]
    assert output["files"][0]["release"] == {"framework": "torchtitan", "version": "0.2.0",
                                             "source": "--torchtitan-version", "detail": "0.2.0"}


def test_json_and_text_say_which_release_judged_each_file():
    _, output = check_json("--isolated", str(RELEASES / "torchtitan_new_pin"))
    assert output["files"][0]["release"] == {"framework": "torchtitan", "version": "0.2.1",
                                             "source": "requirements.txt:2", "detail": "torchtitan==0.2.1"}
    text = run_cli("check", "--isolated", str(RELEASES / "torchtitan_new_pin"), str(RELEASES / "torchtitan_no_pin")).stdout
    assert ("judged by torchtitan 0.2.1 (requirements.txt:2): 1 file; the newest torchtitan (no pin found): 1 file"
            in text.splitlines())


def test_deepspeed_rules_use_the_pin_of_the_file_being_checked():
    _, output = check_json("--isolated", "--min-severity", "info", str(RELEASES / "deepspeed_old_pin"),
                           str(RELEASES / "torchtitan_no_pin"))
    (ds322,) = [f for f in output["findings"] if f["code"] == "DS322"]
    assert "DeepSpeed 0.16.3 (requirements/base.txt:2) ignores it" in ds322["message"]
    assert output["files"][0]["release"]["source"] == "requirements/base.txt:2"  # read through `-r`
    # given, the version wins over the pin: 0.19.8 reads intra_op_parallelism
    _, given = check_json("--isolated", "--deepspeed-version", "0.19.8", str(RELEASES / "deepspeed_old_pin"))
    assert not [f for f in given["findings"] if f["code"] == "DS322"]


# --- Axolotl: checks added in a release, keys an older schema lacks ------------------------------


def _codes(case: str, *options: str) -> dict[str, list[dict]]:
    _, output = check_json("--isolated", "--min-severity", "info", *options, str(RELEASES / case))
    found: dict[str, list[dict]] = {}
    for finding in output["findings"]:
        found.setdefault(finding["code"], []).append(finding)
    return found


def test_the_fsdp1_list_is_read_by_axolotl_0_19_and_refused_from_0_20():
    assert "AX101" not in _codes("axolotl_old_pin")  # 0.19.0 still runs FSDP1 with the list
    (refused,) = _codes("axolotl_new_pin")["AX101"]  # >=0.20,<0.21: the newest release the range allows
    assert refused["severity"] == "error" and refused["message"].endswith("(judged by axolotl 0.20.0 (pyproject.toml:3))")
    (newest,) = _codes("axolotl_no_pin")["AX101"]
    assert newest["message"].endswith("(from axolotl 0.20.0; judged by the newest, 0.21.0)")
    # given, the release wins over the pin
    assert "AX101" in _codes("axolotl_old_pin", "--axolotl-version", "0.21.0")


def test_a_key_newer_than_the_pinned_axolotl_is_reported():
    (added,) = _codes("axolotl_added_key")["AX001"]
    assert added["message"].startswith("context_parallel_size is not a key of axolotl 0.11.0 (requirements.txt:1)")
    assert "added in axolotl 0.12.0" in added["message"]
    assert "AX001" not in _codes("axolotl_added_key", "--axolotl-version", "0.12.0")


def test_an_axolotl_pin_older_than_the_tables_is_an_info():
    found = _codes("axolotl_old_pin", "--axolotl-version", "0.4.0")["AX101"]
    assert [f["severity"] for f in found] == ["info"] and found[0]["unknown_context"]["kind"] == "release"


def test_a_release_dependent_axolotl_verdict_needs_a_release(tmp_path):
    """AX101 holds from axolotl 0.20.0 on (0.19.0 still ran the FSDP1 list): judged as an error under a
    release pin or an unpinned install (the newest when installed), an info with no pin or under a branch
    build of Axolotl's image, whose release is unknown."""
    config = (FIXTURES / "axolotl" / "rules" / "AX101" / "bad.yaml").read_text()
    cases = {"pinned": ("requirements.txt", "axolotl==0.20.0\n"), "unpinned": ("requirements.txt", "axolotl\n"),
             "old": ("requirements.txt", "axolotl==0.19.0\n"), "none": None,
             "branch": ("Dockerfile", "FROM axolotlai/axolotl:main-py3.11-cu124-2.5.1\n")}
    found = {}
    for name, dependency in cases.items():
        root = _repo(tmp_path / name, {"config.yaml": config, **(dict([dependency]) if dependency else {})})
        _, output = check_json("--select", "AX101", str(root / "config.yaml"))
        found[name] = [f["severity"] for f in output["findings"]]
    assert found == {"pinned": ["error"], "unpinned": ["error"], "old": [], "none": ["info"], "branch": ["info"]}


def test_an_axolotl_checkout_is_its_own_pin(tmp_path):
    """A repository that is Axolotl itself (a fork or checkout) runs its own version: VERSION from 0.13,
    src/axolotl/__init__.py's __version__ before."""
    toml = '[project]\nname = "axolotl"\ndynamic = ["version"]\n'
    new = _repo(tmp_path / "new", {"pyproject.toml": toml, "VERSION": "0.16.1\n", "examples/c.yml": "base_model: x\n"})
    old = _repo(tmp_path / "old", {"pyproject.toml": toml, "src/axolotl/__init__.py": '__version__ = "0.10.0"\n',
                                   "examples/c.yml": "base_model: x\n"})
    other = _repo(tmp_path / "other", {"pyproject.toml": '[project]\nname = "mine"\n', "VERSION": "0.16.1\n",
                                       "c.yml": "base_model: x\n"})
    assert detect("axolotl", str(new / "examples" / "c.yml")).text() == "axolotl 0.16.1 (VERSION:1)"
    assert detect("axolotl", str(old / "examples" / "c.yml")).text() == "axolotl 0.10.0 (src/axolotl/__init__.py:1)"
    assert detect("axolotl", str(other / "c.yml")).source == "no pin found"
