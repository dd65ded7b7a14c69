"""Issue 30: a finding's premises are established from evidence in the repository, and the driver, not
the rule, decides the severity from them. Each class of premise has a fixture tree of its own under
fixtures/context/premises/ that holds the context (a submodule that is not checked out, an installer's
fork, the repository's own config manager, a src-layout extension, git-URL pins, a runner section's
fork, null, an inference config, the repository's own reader of a key, a sed template, a placeholder)."""

from __future__ import annotations

import json

import pytest

from shardshift.cli import main

from conftest import ROOT, check_json

PREMISES = ROOT / "fixtures" / "context" / "premises"


def check(*paths: str, extra: tuple[str, ...] = ()) -> dict:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["check", "--isolated", "--format", "json", "--min-severity", "info", *extra, *paths])
    return json.loads(out.getvalue())


def findings(name: str, code: str) -> list[dict]:
    return [f for f in check(str(PREMISES / name))["findings"] if f["code"] == code]


def premise(finding: dict, kind: str) -> dict:
    [found] = [p for p in finding["evidence"] if p["premise"] == kind]
    return found


@pytest.mark.parametrize("name", ["megatron_submodule", "megatron_installer_fork"])
def test_an_entry_script_that_is_not_in_the_tree_is_an_unknown_program(name):
    [finding] = findings(name, "MG001")
    assert finding["severity"] == "info" and premise(finding, "program")["state"] == "unknown"
    # upstream's spelling is a suggestion only: renaming the flag could break the fork's launch
    assert finding["fix"] == "--tensor-model-parallel-size" and "fix_kind" not in finding


def test_fix_does_not_apply_a_fix_whose_premise_is_unknown(tmp_path, capsys):
    config = '{\n  "train_batch_size": 16,\n  "zero_optimisation": {"stage": 2}\n}\n'
    template, plain = tmp_path / "template", tmp_path / "plain"
    for tree in (template, plain):
        tree.mkdir()
        (tree / "ds_template.json").write_text(config, encoding="utf-8")
    (template / "run.sh").write_text('sed "s/16/$GBS/" ds_template.json > ds.generated.json\n', encoding="utf-8")
    main(["check", "--isolated", "--fix", str(template)])
    assert (template / "ds_template.json").read_text(encoding="utf-8") == config  # a template: only suggested
    main(["check", "--isolated", "--fix", str(plain)])
    assert '"zero_optimization"' in (plain / "ds_template.json").read_text(encoding="utf-8")
    capsys.readouterr()


def test_the_submodule_is_named_with_its_gitmodules_line():
    [finding] = findings("megatron_submodule", "MG001")
    assert "git submodule third_party/Megatron-LM (.gitmodules:2" in finding["unknown_context"]["what"]


def test_an_installer_that_clones_a_fork_makes_the_release_a_fork():
    output = check(str(PREMISES / "megatron_installer_fork"))
    assert output["files"][0]["release"]["basis"] == "fork"


def test_the_entry_script_present_establishes_the_program_with_its_file():
    [finding] = findings("megatron_present", "MG001")
    assert finding["severity"] == "error"
    program = premise(finding, "program")
    assert program["state"] == "established" and program["file"].endswith("third_party/Megatron-LM/pretrain_gpt.py")


def test_the_repositorys_own_config_manager_makes_the_reader_unknown():
    [finding] = findings("torchtitan_own_manager", "TT001")
    assert finding["severity"] == "info"
    reader = premise(finding, "reader")
    assert reader["state"] == "unknown" and reader["file"].endswith("myproj/config_manager.py")


def test_a_launch_that_runs_torchtitan_with_the_file_establishes_the_reader():
    [finding] = findings("torchtitan_launched", "TT001")
    assert finding["severity"] == "error"
    assert premise(finding, "reader")["file"].endswith("torchtitan_launched/run.sh")


def test_a_custom_config_module_in_a_src_layout_is_followed():
    assert findings("torchtitan_src_extension", "TT001") == []


def test_a_git_url_pin_with_a_tag_is_a_pin():
    output = check(str(PREMISES / "torchtitan_git_pin"))
    assert output["files"][0]["release"]["version"] == "0.2.1"
    assert output["files"][0]["release"]["source"] == "requirements.txt:2"


def test_a_runner_section_that_installs_a_fork_makes_the_release_unknown():
    found = check(str(PREMISES / "axolotl_runner_fork"))["findings"]
    assert found and all(f["severity"] == "info" for f in found)
    assert all(premise(f, "release")["state"] == "unknown" for f in found if f["code"].startswith("AX"))


def test_null_batch_size_is_unset_as_deepspeed_reads_it():
    assert findings("deepspeed_null", "DS102") == [] and findings("deepspeed_null", "DS201") == []


def test_an_inference_config_is_not_judged_as_a_training_config():
    assert check(str(PREMISES / "deepspeed_inference"))["findings"] == []


def test_a_key_the_repositorys_own_code_reads_is_not_reported_as_ignored():
    assert findings("deepspeed_own_reader", "DS101") == []
    [ignored] = findings("deepspeed_no_reader", "DS101")
    assert ignored["severity"] in ("error", "warning")
    assert premise(ignored, "readers")["state"] == "established"


@pytest.mark.parametrize(("name", "line"), [("deepspeed_template", 4), ("deepspeed_template_variable", 6)])
def test_a_template_filled_in_with_sed_is_only_an_info_naming_the_sed_command(name, line):
    found = findings(name, "DS102")
    assert len(found) == 2 and all(f["severity"] == "info" for f in found)
    role = premise(found[0], "role")
    assert role["state"] == "unknown" and role["file"].endswith(f"{name}/run.sh") and role["line"] == line


def test_a_stand_in_of_a_template_by_its_name_is_a_placeholder_without_its_script():
    """No script of the tree fills it in (a partial checkout, a launcher elsewhere): the file's name says it
    is a template, so its stand-ins are placeholders, known only once it is rendered; what it writes
    literally stays judged (DS331 on its 5e9 bucket)."""
    found = findings("deepspeed_template_unfilled", "DS102")
    assert len(found) == 2 and all(f["severity"] == "info" for f in found)
    role = premise(found[0], "role")
    assert role["state"] == "unknown" and "'CONFIG_GBS' at /train_batch_size" in role["what"]
    assert role["file"].endswith("deepspeed_template_unfilled/ds_config_TEMPLATE.json") and role["line"] == 2
    [literal] = findings("deepspeed_template_unfilled", "DS331")
    assert literal["severity"] == "warning"


def test_one_template_signal_alone_is_judged_as_written(tmp_path):
    """A stand-in in a file not named as a template, or a template name without stand-ins, with no script
    that fills it in: judged as the ds_config it looks like."""
    (tmp_path / "stand_in").mkdir()
    (tmp_path / "stand_in" / "ds_config.json").write_text('{"train_batch_size": CONFIG_GBS,\n "zero_optimization": '
                                                          '{"stage": 2}}\n', encoding="utf-8")
    (tmp_path / "named").mkdir()
    (tmp_path / "named" / "ds_template.json").write_text('{"train_batch_size": 16, "zero_optimization": '
                                                         '{"stage": "two"}}\n', encoding="utf-8")
    for folder in ("stand_in", "named"):
        _, output = check_json("--isolated", str(tmp_path / folder))
        errors = [f for f in output["findings"] if f["code"] == "DS102"]
        assert errors and all(f["severity"] == "error" for f in errors), (folder, output["findings"])


def test_another_programs_json_is_not_judged_as_a_ds_config():
    found = findings("deepspeed_other_program", "DS101")
    assert len(found) == 5 and all(f["severity"] == "info" for f in found)
    assert "only 1 of its 6 top-level keys are DeepSpeed's" in found[0]["unknown_context"]["what"]


def test_a_ds_config_with_a_misspelt_key_is_still_a_ds_config():
    [finding] = findings("deepspeed_no_reader", "DS101")
    assert premise(finding, "role")["state"] == "established"


def test_the_repositorys_own_command_line_that_loads_toml_makes_the_reader_unknown():
    [finding] = findings("torchtitan_own_cli", "TT001")
    assert finding["severity"] == "info" and premise(finding, "reader")["file"].endswith("src/proj/cli.py")


def test_a_placeholder_value_is_not_judged_as_set():
    [finding] = findings("axolotl_placeholder", "AX103")
    assert finding["severity"] == "info" and "placeholder" in finding["unknown_context"]["what"]


def test_every_error_and_warning_of_the_fixtures_has_evidence_for_each_premise_it_declares():
    from shardshift.context import FORMAT_FRAMEWORK
    from shardshift.premises import declared
    from shardshift.rules import all_rules

    rules = {rule.code: rule for rule in all_rules()}
    output = check(str(ROOT / "fixtures"))
    formats = {entry["path"]: entry["format"] for entry in output["files"]}
    judged = [f for f in output["findings"] if f["severity"] in ("error", "warning")]
    assert len(judged) > 300
    problems = []
    for finding in judged:
        fmt = formats.get(finding["file"])
        wanted = set(declared(rules[finding["code"]], fmt))
        rows = finding.get("evidence", [])
        kinds = {p["premise"] for p in rows}
        # the premises that apply to every file of its format must be there, each established
        required = {k for k in wanted if (k == "release" and fmt in FORMAT_FRAMEWORK)
                    or (k == "program" and fmt == "megatron") or (k == "role" and fmt == "deepspeed")
                    or (k == "reader" and fmt == "torchtitan")}
        if required - kinds or any(p["state"] != "established" or not p["what"] for p in rows) or kinds - wanted:
            problems.append((finding["file"], finding["code"], sorted(required - kinds), rows))
    assert not problems, problems[:5]


def test_show_evidence_prints_each_premise_under_the_finding(capsys):
    main(["check", "--isolated", "--show-evidence", str(PREMISES / "megatron_present")])
    text = capsys.readouterr().out
    assert "    evidence: program established: entry pretrain_gpt.py present" in text
    assert "    evidence: release established:" in text


def test_a_model_name_the_repository_registers_itself_is_an_unknown_extension():
    [finding] = findings("torchtitan_registers", "TT005")
    assert finding["severity"] == "info"
    extension = premise(finding, "extension")
    assert extension["state"] == "unknown" and extension["file"].endswith("torchtitan_registers/proj/models.py")
    assert extension["line"] == 4


def test_a_megatron_package_above_the_entry_script_is_the_program():
    assert findings("megatron_ancestor_fork", "MG001") == []  # --task-name is the fork's own flag


def test_a_file_of_a_vendored_deepspeed_source_tree_is_not_the_repositorys_config():
    found = findings("deepspeed_vendored_tree", "DS101")
    assert found and all(f["severity"] == "info" for f in found)
    role = premise(found[0], "role")
    assert role["state"] == "unknown" and role["file"].endswith("DeepSpeed/deepspeed/__init__.py")


def test_a_launch_of_the_projects_own_entry_leaves_the_reader_unknown():
    [finding] = findings("torchtitan_own_entry", "TT001")
    assert finding["severity"] == "info"
    reader = premise(finding, "reader")
    assert reader["state"] == "unknown" and "runs proj.train rather than torchtitan" in reader["what"]


def test_a_launch_script_shardshifts_grammar_cannot_read_is_judged_by_bash(tmp_path, monkeypatch):
    from shardshift.rules.general import syntax

    assert syntax.bash_reads('if [[ $1 =~ gs://([^/]+)/*(.*) ]]; then echo "$1"; fi\n') is True
    assert "syntax error" in syntax.bash_reads("if [ -n x ]; then\necho\n")
    # bash refuses an `if` never closed: an error that says so
    refused = tmp_path / "refused.sh"
    refused.write_text("if [ -n \"$X\" ]; then\ntorchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 4\n",
                       encoding="utf-8")
    [error] = [f for f in check(str(refused))["findings"] if f["code"] == "SS001"]
    assert error["severity"] == "error" and "bash -n refuses it too" in error["message"]
    # where bash reads what the grammar cannot (a construct it lacks), an info says the launches are unread
    monkeypatch.setattr(syntax, "bash_reads", lambda text: True)
    [info] = [f for f in check(str(refused))["findings"] if f["code"] == "SS001"]
    assert info["severity"] == "info" and info["unknown_context"]["kind"] == "reader"
    assert "not checked" in info["unknown_context"]["what"]


def test_without_bash_a_launch_script_the_grammar_cannot_read_is_an_info(tmp_path, monkeypatch):
    import shutil

    real = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == "bash" else real(name, *a, **k))
    refused = tmp_path / "refused.sh"
    refused.write_text("if [ -n \"$X\" ]; then\ntorchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 4\n",
                       encoding="utf-8")
    [info] = [f for f in check(str(refused))["findings"] if f["code"] == "SS001"]
    assert info["severity"] == "info" and info["unknown_context"]["kind"] == "reader"
    # a ds_config that does not parse is still an error: the framework's own loader is the reader
    broken = tmp_path / "ds_config.json"
    broken.write_text('{"train_batch_size": 8,,}', encoding="utf-8")
    [error] = [f for f in check(str(broken))["findings"] if f["code"] == "SS001"]
    assert error["severity"] == "error"


def test_an_entry_path_built_from_the_scripts_own_place_is_found_by_its_known_end():
    [finding] = findings("megatron_script_relative", "MG001")
    assert finding["severity"] == "error"
    assert premise(finding, "program")["file"].endswith("megatron_script_relative/pkg/train/pretrain_gpt.py")


def test_a_client_optimizer_passed_to_deepspeed_initialize_silences_the_optimizer_block_rules():
    # the entry's imported module builds its own optimizer: DeepSpeed never builds the block
    found = check(str(PREMISES / "deepspeed_client_optimizer"))["findings"]
    assert not [f for f in found if f["code"].startswith("DS40")]
    # the same file where the entry passes none: DeepSpeed builds it, and raises on max_grad_norm
    [error] = findings("deepspeed_config_optimizer", "DS404")
    assert error["severity"] == "error"
    evidence = premise(error, "consumer")
    assert evidence["state"] == "established" and evidence["file"].endswith("train.py") and evidence["line"] == 9


def test_an_entry_that_is_not_in_the_tree_leaves_the_optimizers_builder_unknown():
    for code in ("DS404", "DS406"):
        [info] = findings("deepspeed_client_optimizer_absent", code)
        assert info["severity"] == "info" and info["unknown_context"]["kind"] == "consumer"
        assert "pretrain_net.py" in premise(info, "consumer")["what"]


def test_a_toml_of_a_project_whose_own_command_takes_toml_files_has_an_unknown_reader():
    for finding in findings("torchtitan_own_command", "TT005"):
        assert finding["severity"] == "info"
        evidence = premise(finding, "reader")
        assert evidence["state"] == "unknown" and "quarry-train" in evidence["what"]
        assert evidence["file"].endswith("job.yaml") and evidence["line"] == 5


def test_a_branch_chosen_by_a_machine_count_known_at_run_time_is_not_paired_with_the_allocations_world():
    found = check(str(PREMISES / "megatron_world_guard"))["findings"]
    [guarded] = [f for f in found if f["code"] == "PL101" and f["file"].endswith("/train.sbatch")]
    assert guarded["severity"] == "info" and guarded["unknown_context"]["kind"] == "value"
    assert "NUM_NODES_TOTAL" in guarded["unknown_context"]["what"]
    # a branch chosen by something else (the model size) must fit the allocation: still an error
    [error] = [f for f in found if f["code"] == "PL101" and f["file"].endswith("/train_sizes.sbatch")]
    assert error["severity"] == "error" and '"$SIZE" = "large"' in error["message"]


def test_machines_listed_as_stand_ins_are_not_counted():
    found = check(str(PREMISES / "torchtitan_stand_in_hosts" / "launch.sh"),
                  str(PREMISES / "torchtitan_stand_in_hosts" / "configs" / "moe.toml"))["findings"]
    assert [f for f in found if f["code"] == "PL102"] == []
    # the same launch on two named machines counts 16 processes, which the degrees cannot divide
    found = check(str(PREMISES / "torchtitan_stand_in_hosts" / "launch_named.sh"),
                  str(PREMISES / "torchtitan_stand_in_hosts" / "configs" / "moe.toml"))["findings"]
    [error] = [f for f in found if f["code"] == "PL102"]
    assert error["severity"] == "error" and "world size 16" in error["message"]


def test_a_model_added_to_torchtitans_registry_through_variables_is_an_extension():
    [finding] = findings("torchtitan_registry_patched", "TT005")
    assert finding["severity"] == "info"
    evidence = premise(finding, "extension")
    assert evidence["state"] == "unknown" and evidence["file"].endswith("heron/__init__.py") and evidence["line"] == 15


def test_an_entry_that_parses_its_own_command_line_is_judged_by_that_parser():
    found = check(str(PREMISES / "megatron_own_parser"))["findings"]
    by_code = {f["code"]: f for f in found}
    assert set(by_code) == {"MG001", "MG002"}  # no Megatron validate_args check: Megatron never runs
    assert by_code["MG001"]["severity"] == "error" and "--micro-batch-size" in by_code["MG001"]["message"]
    assert by_code["MG002"]["severity"] == "warning"
    program = premise(by_code["MG001"], "program")
    assert program["state"] == "established" and "read_settings() in corelm/settings.py" in program["what"]


def test_a_file_the_vendored_copys_own_code_hands_to_deepspeed_is_judged_for_what_it_holds():
    found = check(str(PREMISES / "deepspeed_vendored_tree"))["findings"]
    mine = [f for f in found if f["file"].endswith("ds_config_offload_legacy.json")]
    [legacy] = [f for f in mine if f["code"] == "DS320"]
    assert legacy["severity"] == "warning"
    role = premise(legacy, "role")
    assert role["state"] == "established" and role["file"].endswith("test_offload_legacy.py") and role["line"] == 6
    # what it lacks (a batch size) may come from the config the copy's code merges it into
    [batch] = [f for f in mine if f["code"] == "DS201"]
    assert batch["severity"] == "info" and premise(batch, "role")["state"] == "unknown"


def test_a_config_no_loader_names_is_unsure_where_the_project_passes_its_own_optimizer():
    # the run that uses the file is not found by its name; the project's one initialize call passes an
    # optimizer of its own: who builds this block is unknown, not "nothing passes one"
    [info] = findings("deepspeed_client_optimizer_unnamed", "DS404")
    assert info["severity"] == "info" and info["unknown_context"]["kind"] == "consumer"
    consumer = premise(info, "consumer")
    assert consumer["file"].endswith("engine/launching.py") and consumer["line"] == 11
