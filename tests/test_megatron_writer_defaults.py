"""`convert SCRIPT --to megatron-args` for launch scripts whose values come from their own defaults (issue 20),
through the CLI: the defaults are written as values; a value only the environment gives (no default) is never
dropped in silence: the report marks it unknown, says when Megatron refuses the list without it, and
`--strict` fails; `--env NAME=VALUE` supplies it. (Megatron's own verdict on these lists:
tests/test_megatron_writer_defaults_oracle.py.)"""

from __future__ import annotations

import json

from conftest import FIXTURES, run_cli

DEFAULTS = FIXTURES / "megatron" / "defaults"


def _convert(tmp_path, name, *extra):
    report = tmp_path / "report.json"
    done = run_cli("convert", str(DEFAULTS / name), "--to", "megatron-args", "--report", str(report), *extra)
    return done, (json.loads(report.read_text()) if report.exists() else None)


def _pairs(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        words = line.split()
        out[words[0]] = " ".join(words[1:])
    return out


def test_defaults_are_written_as_values(tmp_path):
    done, report = _convert(tmp_path, "torchrun_defaults.sh", "--strict")
    assert done.returncode == 0, done.stderr
    written = _pairs(done.stdout)
    assert {k: written[k] for k in ("--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--num-layers",
                                    "--micro-batch-size", "--global-batch-size", "--train-iters")} == \
        {"--tensor-model-parallel-size": "2", "--pipeline-model-parallel-size": "2", "--num-layers": "8",
         "--micro-batch-size": "2", "--global-batch-size": "64", "--train-iters": "100"}
    assert report["summary"]["unknown"] == 0


def test_unknown_required_flag_is_reported_not_silently_dropped(tmp_path):
    done, report = _convert(tmp_path, "unknown_layers.sh")
    assert done.returncode == 0, done.stderr
    assert "--num-layers" not in done.stdout and "--seed" not in done.stdout
    refused = [e for e in report["entries"] if e["status"] == "unknown" and "--num-layers" in e["reason"]
               and "refuses" in e["reason"]]
    assert len(refused) == 1 and "NUM_LAYERS" in refused[0]["reason"]
    seed = [e for e in report["entries"] if e["source"] == "--seed"]
    assert [e["status"] for e in seed] == ["unknown"], seed  # was "exact" though not written
    assert "SEED" in seed[0]["reason"]
    strict, _ = _convert(tmp_path, "unknown_layers.sh", "--strict")
    assert strict.returncode == 1


def test_env_supplies_what_the_script_leaves_to_the_environment(tmp_path):
    done, report = _convert(tmp_path, "unknown_layers.sh", "--env", "NUM_LAYERS=4", "--env", "SEED=7", "--strict")
    assert done.returncode == 0, done.stderr
    written = _pairs(done.stdout)
    assert (written["--num-layers"], written["--seed"]) == ("4", "7")
    assert report["summary"]["unknown"] == 0
