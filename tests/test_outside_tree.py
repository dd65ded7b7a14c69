"""Issue 31: a file outside the checked tree that a checked file names is reported (SS006), not
read, unless asked (--follow-outside / follow-outside = true); pins show only the pin."""

from __future__ import annotations

import json

from conftest import run_cli

TYPO = '{"train_batch_size": 8, "zero_optimisation": {"stage": 2}}'


def _tree(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    outside = tmp_path / "elsewhere" / "ds.json"
    outside.write_text(TYPO, encoding="utf-8")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "run.sh").write_text(f"#!/bin/bash\ndeepspeed train.py --deepspeed {outside}\n", encoding="utf-8")
    return repo, outside


def _findings(done) -> list[dict]:
    return json.loads(done.stdout)["findings"]


def test_a_file_outside_the_tree_is_reported_and_not_read(tmp_path, monkeypatch):
    repo, outside = _tree(tmp_path)
    opened = []
    real_open = open

    def watching(path, *args, **kwargs):
        opened.append(str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", watching)
    done = run_cli("check", "--isolated", "--format", "json", "--min-severity", "info", ".", cwd=repo)
    [finding] = [f for f in _findings(done) if f["code"] == "SS006"]
    assert finding["severity"] == "info" and str(outside) in finding["message"] and finding["line"] == 2
    assert str(outside) not in opened
    # asked to, it reads the file: the run's setup holds it, and nothing is reported as outside
    done = run_cli("check", "--isolated", "--format", "json", "--min-severity", "info", "--follow-outside", ".",
                   cwd=repo)
    assert not [f for f in _findings(done) if f["code"] == "SS006"]
    assert str(outside) in opened


def test_the_configuration_key_asks_for_it_too(tmp_path):
    repo, _ = _tree(tmp_path)
    (repo / "shardshift.toml").write_text("follow-outside = true\n", encoding="utf-8")
    done = run_cli("check", "--format", "json", "--min-severity", "info", ".", cwd=repo)
    assert not [f for f in _findings(done) if f["code"] == "SS006"]
    (repo / "shardshift.toml").write_text('follow-outside = "yes"\n', encoding="utf-8")
    done = run_cli("check", ".", cwd=repo)
    assert done.returncode == 2 and "follow-outside must be true or false" in done.stderr


def test_an_include_that_leaves_the_repository_is_not_read_and_a_pin_shows_only_itself(tmp_path):
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "reqs.txt").write_text("deepspeed==0.14.0 SECRET-TOKEN-abc123\n", encoding="utf-8")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "requirements.txt").write_text("-r ../outside/reqs.txt\ndeepspeed==0.16.3  --hash=sha256:abc TOKEN\n",
                                           encoding="utf-8")
    (repo / "ds_config.json").write_text(TYPO, encoding="utf-8")
    done = run_cli("check", "--format", "json", "--min-severity", "info", ".", cwd=repo)
    assert "SECRET-TOKEN" not in done.stdout and "TOKEN" not in done.stdout
    assert "0.16.3" in done.stdout and "0.14.0" not in done.stdout


def test_the_rules_fixtures(tmp_path):
    from conftest import FIXTURES

    folder = FIXTURES / "general" / "rules" / "SS006"
    outside = tmp_path / "cluster" / "zero2_cluster.json"
    outside.parent.mkdir()
    outside.write_text((folder / "ds_config.json").read_text(encoding="utf-8"), encoding="utf-8")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "bad.sh").write_text((folder / "bad.sh").read_text(encoding="utf-8")
                                 .replace("/etc/cluster/zero2_cluster.json", str(outside)), encoding="utf-8")
    done = run_cli("check", "--isolated", "--format", "json", "--min-severity", "info", ".", cwd=repo)
    [finding] = [f for f in _findings(done) if f["code"] == "SS006"]
    assert finding["line"] == 3 and str(outside) in finding["message"]
    done = run_cli("check", "--isolated", "--format", "json", "--min-severity", "info", str(folder))
    assert not [f for f in _findings(done) if f["code"] == "SS006"]  # good.sh names its neighbour
