"""The GitHub Action (action.yml): its `run:` steps run here as a runner runs them (bash -eo pipefail,
the step's `env:` with the inputs put in, GITHUB_OUTPUT, runner.temp, github.action_path = a copy
of this checkout), in a fresh virtual environment that the action's own install step builds, on a copy of
a small project with a [tool.shardshift] configuration. The `uses:` steps (setup-python,
upload-sarif) cannot run here: their inputs and conditions are checked instead, and whether the
upload would run is decided from its `if:` as GitHub would. The install step takes about 13 s,
so the tests that run steps are oracle tests (CI runs them); the static ones are not."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from conftest import ROOT, SHARED

ACTION = ROOT / "action.yml"
SARIF_SCHEMA = SHARED / "schemas" / "sarif-schema-2.1.0.json"
needs_schema = pytest.mark.skipif(not SARIF_SCHEMA.is_file(), reason="../shared/schemas is not present")
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
NAME = re.compile(r"[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)+")
# what GitHub runs for `shell: bash` (docs: "Workflow syntax", jobs.<job_id>.steps[*].shell)
BASH = ["bash", "--noprofile", "--norc", "-eo", "pipefail"]

BAD_CONFIG = """{
  "train_micro_batch_size_per_gpu": 4,
  "zero_optimisation": {"stage": 2},
  "gradient_clipping": "1.0"
}
"""
GOOD_CONFIG = """{
  "train_micro_batch_size_per_gpu": 4,
  "zero_optimization": {"stage": 2},
  "gradient_clipping": 1.0
}
"""
WARNING_CONFIG = """{
  "train_micro_batch_size_per_gpu": 4,
  "gradient_clipping": 1.0,
  "fp16": {"enabled": true, "loss_scale": 128}
}
"""
PROJECT_CONFIG = """[project]
name = "trainer"

[tool.shardshift]
ignore = ["DS102"]
"""


def _action() -> dict:
    return YAML(typ="safe").load(ACTION.read_text(encoding="utf-8"))


def _steps() -> list[dict]:
    return _action()["runs"]["steps"]


def _step(step_id: str) -> dict:
    return next(s for s in _steps() if s.get("id") == step_id)


def _upload_step() -> dict:
    return next(s for s in _steps() if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif"))


# --- static: the metadata and the scripts -----------------------------------------------------

def test_the_action_is_composite_with_name_description_and_branding():
    action = _action()
    assert action["runs"]["using"] == "composite"
    assert action["name"] and action["description"]
    assert action["branding"]["icon"] and action["branding"]["color"]


def test_every_input_is_documented_and_used_and_every_output_comes_from_a_step():
    action = _action()
    text = ACTION.read_text(encoding="utf-8")
    readme = ROOT.joinpath("README.md").read_text(encoding="utf-8")
    section = readme.split("\n## GitHub Action\n", 1)[1].split("\n## ", 1)[0]
    for name, spec in action["inputs"].items():
        assert spec.get("description", "").strip(), f"input {name} has no description"
        assert "default" in spec, f"input {name} has no default"
        assert re.search(rf"inputs\.{re.escape(name)}\b(?!-)", text), f"input {name} is never used"
        assert f"`{name}`" in section, f"input {name} is not in the README's GitHub Action section"
    referenced = set(re.findall(r"inputs\.([\w-]+)", text))
    assert referenced <= set(action["inputs"]), f"no such inputs: {referenced - set(action['inputs'])}"
    step_ids = {s.get("id") for s in _steps()}
    assert set(re.findall(r"steps\.([\w-]+)\.", text)) <= step_ids
    for name, spec in action["outputs"].items():
        assert spec["description"].strip()
        match = re.fullmatch(r"\$\{\{ steps\.([\w-]+)\.outputs\.([\w-]+) \}\}", spec["value"])
        assert match and match.group(1) in step_ids, spec["value"]


def test_the_readme_workflow_uses_the_action_with_its_inputs_and_the_upload_permission():
    readme = ROOT.joinpath("README.md").read_text(encoding="utf-8")
    section = readme.split("\n## GitHub Action\n", 1)[1].split("\n## ", 1)[0]
    workflow = YAML(typ="safe").load(re.search(r"```yaml\n(.*?)```", section, re.S).group(1))
    assert workflow["permissions"]["security-events"] == "write"
    steps = workflow["jobs"]["check"]["steps"]
    assert steps[0]["uses"] == "actions/checkout@v4"
    ours = next(s for s in steps if s.get("uses", "").endswith("/shardshift@v1"))
    assert ours["with"] and set(ours["with"]) <= set(_action()["inputs"])


def test_run_scripts_take_inputs_only_through_env():
    runs = [s for s in _steps() if "run" in s]
    assert runs
    for step in runs:
        script = step["run"]
        # an expression pasted into a script is script injection
        assert "${{" not in script, f"step {step['name']!r}: an expression inside run:"
        assert step["shell"] == "bash"
        assert "if" not in step, "a run step runs whenever the steps before it succeeded (the test relies on it)"
        declared = set(step.get("env", {}))
        used = set(re.findall(r"\$\{?(SHARDSHIFT\w*)", script))
        assert used <= declared, f"step {step['name']!r} reads {used - declared} that its env does not set"
        assert declared <= used, f"step {step['name']!r} sets {declared - used} that its script never reads"
        done = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
        assert done.returncode == 0, done.stderr


def test_python_is_set_up_without_changing_the_jobs_environment():
    setup = _step("python")
    assert setup["uses"] == "actions/setup-python@v5"
    assert setup["with"] == {"python-version": "${{ inputs.python-version }}", "update-environment": False}
    assert setup["if"] == "inputs.python-version != ''"
    install = _step("install")
    assert install["env"]["SHARDSHIFT_PYTHON"] == "${{ steps.python.outputs.python-path }}"
    assert install["env"]["SHARDSHIFT_VENV"].startswith("${{ runner.temp }}/")


def test_the_sarif_is_uploaded_even_when_check_fails_and_before_the_step_fails():
    upload = _upload_step()
    assert upload["uses"] == "github/codeql-action/upload-sarif@v3"
    assert upload["if"].startswith("always() && inputs.upload == 'true' && inputs.format == 'sarif'")
    assert upload["with"] == {"sarif_file": "${{ steps.check.outputs.sarif-file }}", "category": "shardshift"}
    steps = _steps()
    order = [s.get("id") or s["name"] for s in steps]
    assert order.index("check") < steps.index(upload) < len(steps) - 1
    assert "SHARDSHIFT_EXIT_CODE" in steps[-1]["env"] and "exit" in steps[-1]["run"]


# --- running the steps --------------------------------------------------------------------------

def _evaluate(expression: str, context: dict) -> str:
    """A `${{ }}` expression of this action: a dotted name (inputs.x, steps.id.outputs.y,
    github.action_path, runner.temp); a missing step output is empty, as on GitHub."""
    assert NAME.fullmatch(expression), f"the test knows no expression {expression!r}"
    if expression.startswith("inputs."):
        assert expression[len("inputs."):] in context["inputs"], f"no input {expression!r}"
    value = context
    for part in expression.split("."):
        value = value.get(part, "") if isinstance(value, dict) else ""
    return str(value)


def _condition(condition: str, context: dict) -> bool:
    """An `if:` of this action: `always()` and comparisons of a name with a string, joined by &&."""
    verdict = True
    for term in condition.split("&&"):
        term = term.strip()
        if term == "always()":
            continue
        match = re.fullmatch(r"([\w.-]+) (==|!=) '([^']*)'", term)
        assert match, f"the test knows no condition {term!r}"
        # GitHub compares strings ignoring case (docs: "Evaluate expressions", operators)
        equal = _evaluate(match.group(1), context).lower() == match.group(3).lower()
        verdict = verdict and (equal if match.group(2) == "==" else not equal)
    return verdict


def _substitute(text: str, context: dict) -> str:
    return EXPRESSION.sub(lambda m: _evaluate(m.group(1), context), str(text))


def _base_env() -> dict[str, str]:
    """The runner's environment, not this test process's: no PYTHONPATH or VIRTUAL_ENV (the venv
    must use what it installed), pip's settings kept (its index, wheel folders and cache)."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SSL_CERT_FILE", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")
    env = {k: v for k, v in os.environ.items() if k in keep or k.startswith("PIP_")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", os.defpath).split(os.pathsep)
                                  if not os.environ.get("VIRTUAL_ENV") or not p.startswith(os.environ["VIRTUAL_ENV"]))
    return env


class Runner:
    """Runs the action's steps in order for one set of inputs, the way a runner does."""

    def __init__(self, workspace: Path, temp: Path, inputs: dict[str, str], steps: dict | None = None,
                 action_path: Path = ROOT, python: str = sys.executable, env: dict[str, str] | None = None):
        action = _action()
        given = {name: spec.get("default", "") for name, spec in action["inputs"].items()}
        unknown = set(inputs) - set(given)
        assert not unknown, f"no such inputs: {unknown}"
        given.update(inputs)
        self.workspace, self.temp, self.python, self.env = workspace, temp, python, env or {}
        self.context = {"inputs": given, "steps": steps if steps is not None else {},
                        "github": {"action_path": str(action_path), "workspace": str(workspace)},
                        "runner": {"temp": str(temp)}}
        self.uploads: list[dict] = []
        self.results: dict[str, subprocess.CompletedProcess] = {}

    def uses(self, step: dict) -> None:
        """A `uses:` step cannot run here: setup-python stands for this test's Python; an upload
        is recorded with its inputs when its condition holds."""
        if "if" in step and not _condition(step["if"], self.context):
            return
        if step["uses"].startswith("actions/setup-python"):
            self.context["steps"].setdefault(step["id"], {"outputs": {"python-path": self.python}})
        else:
            self.uploads.append({k: _substitute(v, self.context) for k, v in step.get("with", {}).items()})

    def run(self, step: dict) -> subprocess.CompletedProcess:
        key = step.get("id") or step["name"]
        files = {name: self.temp / f"{key}.{name.lower()}" for name in ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH")}
        for file in files.values():
            file.write_text("")
        script = self.temp / f"{key}.sh"
        script.write_text(step["run"], encoding="utf-8")
        env = {**_base_env(), **{k: str(v) for k, v in files.items()}, "CI": "true", "GITHUB_ACTIONS": "true",
               "GITHUB_WORKSPACE": str(self.workspace), "GITHUB_ACTION_PATH": self.context["github"]["action_path"],
               "RUNNER_TEMP": str(self.temp), **self.env}
        env.update({name: _substitute(value, self.context) for name, value in step.get("env", {}).items()})
        cwd = self.workspace / _substitute(step.get("working-directory", "."), self.context)
        done = subprocess.run([*BASH, str(script)], cwd=cwd, env=env, text=True, capture_output=True, timeout=600)
        outputs = dict(line.split("=", 1) for line in files["GITHUB_OUTPUT"].read_text().splitlines() if "=" in line)
        self.context["steps"].setdefault(key, {})["outputs"] = outputs
        self.results[key] = done
        return done

    def steps(self, steps: list[dict]) -> subprocess.CompletedProcess | None:
        """Run `steps` in order; a failing run step ends the job there. Returns the last run step's result."""
        last = None
        for step in steps:
            if "uses" in step:
                self.uses(step)
                continue
            last = self.run(step)
            if last.returncode != 0:
                break
        return last

    def output(self, step_id: str, name: str) -> str:
        return self.context["steps"].get(step_id, {}).get("outputs", {}).get(name, "")


STUB_PYTHON = """#!/bin/bash
# a stand-in interpreter: logs its arguments; `-m venv DIR` makes DIR/bin/python (this stub) and
# DIR/bin/shardshift
echo "$0 $*" >> "$STUB_LOG"
if [ "$1 $2" = "-m venv" ]; then
  mkdir -p "$3/bin" && cp "$0" "$3/bin/python"
  printf '#!/bin/bash\\necho shardshift 0.0.0\\n' > "$3/bin/shardshift" && chmod +x "$3/bin/shardshift"
fi
"""


@pytest.mark.parametrize(("inputs", "python", "requirement"), [
    ({"version": "v0.1.0", "python-version": ""}, "python3", "shardshift==0.1.0"),
    ({"version": "", "python-version": "3.11"}, "setup-python/bin/python3.11", "ACTION_PATH"),
])
def test_the_install_step_picks_the_python_and_what_to_install(tmp_path, inputs, python, requirement):
    """The install step alone, with a stand-in Python (no install): the runner's python3 when no
    python-version is given, else the one setup-python gives; a release from PyPI, else the checkout."""
    stubs = tmp_path / "stubs"
    for name in ("python3", "setup-python/bin/python3.11"):
        (stubs / name).parent.mkdir(parents=True, exist_ok=True)
        (stubs / name).write_text(STUB_PYTHON)
        (stubs / name).chmod(0o755)
    log = tmp_path / "log"
    temp = tmp_path / "temp"
    temp.mkdir()
    env = {"STUB_LOG": str(log), "PATH": f"{stubs}{os.pathsep}{os.environ.get('PATH', os.defpath)}"}
    runner = Runner(tmp_path, temp, inputs, action_path=tmp_path / "action", python=str(stubs / python), env=env)
    done = runner.steps(_steps()[:_install_index() + 1])
    assert done.returncode == 0, done.stderr
    venv = temp / "shardshift-venv"
    requirement = requirement.replace("ACTION_PATH", str(tmp_path / "action"))
    assert log.read_text().splitlines() == [
        f"{stubs / python} -m venv {venv}",
        f"{venv}/bin/python -m pip install --quiet --disable-pip-version-check --no-compile {requirement}"]
    assert runner.output("install", "shardshift") == f"{venv}/bin/shardshift"
    assert done.stdout == "shardshift 0.0.0\n"


def _install_index() -> int:
    return next(i for i, s in enumerate(_steps()) if s.get("id") == "install")


def _checkout(target: Path) -> Path:
    """The action's checkout as `uses:` gets it: what a build of this repository reads. A copy,
    since pip builds a local directory in place (build/ and *.egg-info in the tree, and a stale
    build/lib would go into the next wheel)."""
    shutil.copy2(ROOT / "pyproject.toml", target / "pyproject.toml")
    shutil.copy2(ROOT / "README.md", target / "README.md")
    shutil.copy2(ACTION, target / "action.yml")
    shutil.copytree(ROOT / "src", target / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return target


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """One venv for the module: the steps up to the install step, run once (about 13 s)."""
    temp = tmp_path_factory.mktemp("runner-temp")
    checkout = _checkout(tmp_path_factory.mktemp("action"))
    runner = Runner(tmp_path_factory.mktemp("workspace"), temp, {}, action_path=checkout)
    done = runner.steps(_steps()[:_install_index() + 1])
    assert done is not None and done.returncode == 0, done and done.stderr
    venv = temp / "shardshift-venv"
    assert Path(runner.output("install", "shardshift")).parent.parent == venv
    # installed from this checkout, into the venv alone: the venv's Python finds its own copy
    probe = subprocess.run([str(Path(runner.output("install", "shardshift")).parent / "python"), "-c",
                            "import shardshift, sys; print(shardshift.__file__); print(sys.prefix)"],
                           env=_base_env(), text=True, capture_output=True)
    module, prefix = probe.stdout.split()
    assert Path(module).is_relative_to(venv) and Path(prefix) == venv, probe.stdout
    installed_cli = Path(module).parent / "cli.py"
    assert installed_cli.read_bytes() == (ROOT / "src" / "shardshift" / "cli.py").read_bytes()
    return temp, runner.context["steps"]


def _project(tmp_path: Path, config: str) -> Path:
    """A checkout: project/ with its pyproject.toml and configs/ds_config.json."""
    workspace = tmp_path / "workspace"
    configs = workspace / "project" / "configs"
    configs.mkdir(parents=True)
    (workspace / "project" / "pyproject.toml").write_text(PROJECT_CONFIG)
    (configs / "ds_config.json").write_text(config)
    return workspace


def _run_action(installed, workspace: Path, **inputs: str) -> Runner:
    temp, steps = installed
    runner = Runner(workspace, temp, {"working-directory": "project", "paths": "configs", **inputs},
                    steps=json.loads(json.dumps(steps)))
    runner.steps(_steps()[_install_index() + 1:])
    return runner


def _validate(log: dict) -> None:
    import jsonschema

    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    validator = jsonschema.validators.validator_for(schema)  # the draft the schema declares (draft-04)
    errors = sorted(validator(schema).iter_errors(log), key=lambda e: list(e.path))
    assert not errors, [f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors[:5]]


@pytest.mark.oracle
@needs_schema
def test_findings_give_valid_sarif_uploaded_then_the_step_fails_with_1(installed, tmp_path):
    workspace = _project(tmp_path, BAD_CONFIG)
    runner = _run_action(installed, workspace)
    check = runner.results["check"]
    assert runner.output("check", "exit-code") == "1", check.stderr
    sarif = Path(runner.output("check", "sarif-file"))
    assert sarif == workspace / "project" / "shardshift.sarif" and sarif.is_file()
    log = json.loads(sarif.read_text(encoding="utf-8"))
    _validate(log)
    results = log["runs"][0]["results"]
    # the project's [tool.shardshift] ignore = ["DS102"] held: only the unknown key is left
    assert [r["ruleId"] for r in results] == ["DS101"]
    location = results[0]["locations"][0]["physicalLocation"]
    # relative to the checkout (GITHUB_WORKSPACE), as code scanning resolves it
    assert location["artifactLocation"] == {"uri": "project/configs/ds_config.json", "uriBaseId": "%SRCROOT%"}
    assert location["region"]["startLine"] == 3
    assert runner.uploads == [{"sarif_file": str(sarif), "category": "shardshift"}]
    failed = runner.results[_steps()[-1]["name"]]
    assert failed.returncode == 1 and "exited with 1" in failed.stderr


@pytest.mark.oracle
@needs_schema
def test_a_clean_tree_gives_exit_0_and_an_empty_valid_sarif(installed, tmp_path):
    runner = _run_action(installed, _project(tmp_path, GOOD_CONFIG), **{"sarif-file": "out/results.sarif"})
    assert runner.output("check", "exit-code") == "0", runner.results["check"].stderr
    sarif = Path(runner.output("check", "sarif-file"))
    assert sarif == tmp_path / "workspace" / "project" / "out" / "results.sarif"
    log = json.loads(sarif.read_text(encoding="utf-8"))
    _validate(log)
    assert log["runs"][0]["results"] == []
    assert runner.uploads == [{"sarif_file": str(sarif), "category": "shardshift"}]
    assert runner.results[_steps()[-1]["name"]].returncode == 0


@pytest.mark.oracle
def test_format_github_prints_annotations_and_args_reach_check(installed, tmp_path):
    workspace = _project(tmp_path, BAD_CONFIG)
    # --ignore on the command line replaces the configuration's (README: the command line wins)
    runner = _run_action(installed, workspace, format="github", args="--ignore DS101  --world-size 8")
    check = runner.results["check"]
    assert runner.output("check", "exit-code") == "1", check.stderr
    annotations = [line for line in check.stdout.splitlines() if line.startswith("::")]
    assert annotations and all(a.startswith("::error file=project/configs/ds_config.json,line=4,") for a in annotations)
    assert "DS102" in annotations[0] and "DS101" not in check.stdout
    assert runner.output("check", "sarif-file") == "" and runner.uploads == []
    assert not (workspace / "project" / "shardshift.sarif").exists()
    assert runner.results[_steps()[-1]["name"]].returncode == 1


@pytest.mark.oracle
def test_a_usage_error_fails_with_2_and_its_message_and_uploads_nothing(installed, tmp_path):
    runner = _run_action(installed, _project(tmp_path, BAD_CONFIG), paths="configs missing-folder")
    check = runner.results["check"]
    assert runner.output("check", "exit-code") == "2"
    assert "missing-folder" in check.stderr
    error = next(line for line in check.stdout.splitlines() if line.startswith("::error"))
    assert error.startswith("::error title=shardshift check exited with 2::") and "missing-folder" in error
    assert runner.output("check", "sarif-file") == "" and runner.uploads == []
    assert runner.results[_steps()[-1]["name"]].returncode == 2
    wrong = _run_action(installed, _project(tmp_path / "wrong", BAD_CONFIG), format="text")
    assert wrong.output("check", "exit-code") == "2" and wrong.uploads == []
    assert "::error title=shardshift action::format must be sarif or github, not 'text'" in wrong.results["check"].stdout
    assert wrong.results[_steps()[-1]["name"]].returncode == 2


@pytest.mark.oracle
def test_fail_on_warning_fails_the_step_on_a_warning_that_passes_by_default(installed, tmp_path):
    by_default = _run_action(installed, _project(tmp_path / "default", WARNING_CONFIG), format="github")
    assert by_default.output("check", "exit-code") == "0", by_default.results["check"].stderr
    assert "::warning file=project/configs/ds_config.json" in by_default.results["check"].stdout
    assert by_default.results[_steps()[-1]["name"]].returncode == 0
    strict = _run_action(installed, _project(tmp_path / "strict", WARNING_CONFIG), format="github",
                         **{"fail-on": "warning"})
    assert strict.output("check", "exit-code") == "1", strict.results["check"].stderr
    assert strict.results[_steps()[-1]["name"]].returncode == 1
