"""Issue 32: one listing of the repository per run (git's own, in a git checkout), its facts kept
between runs in shardshift's cache, and the verdicts the same whatever the cache holds: a file
changed, added, removed, committed or ignored since the last run is seen as it is now."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import run_cli

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

AUTO = '{"train_micro_batch_size_per_gpu": "auto", "gradient_clipping": "auto", "zero_optimization": {"stage": 2}}\n'
LAUNCH = "deepspeed train.py --deepspeed configs/ds_config.json\n"


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(repo), *args],
                   check=True, capture_output=True)


def make_repo(path: Path, files: dict[str, str]) -> Path:
    (path / "configs").mkdir(parents=True)
    (path / "configs" / "ds_config.json").write_text(AUTO, encoding="utf-8")
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text, encoding="utf-8")
    git(path, "init", "-q")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "first")
    return path


def no_consumer(repo: Path) -> bool:
    """Whether the check of the ds_config alone says that nothing found passes it to a consumer (DS420)."""
    done = run_cli("check", "--isolated", "--format", "json", "--min-severity", "info", "configs/ds_config.json",
                   cwd=repo)
    return any(f["code"] == "DS420" for f in json.loads(done.stdout)["findings"])


@pytest.fixture()
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("SHARDSHIFT_CACHE_DIR", str(folder))
    monkeypatch.delenv("PRE_COMMIT", raising=False)  # these tests run the check as CI does; a hook's run is below
    return folder


def test_a_consumer_beyond_the_former_bound_is_found(tmp_path, cache):
    # the consumer search used to stop after 20,000 files, walked in sorted order: here 20,050 come first
    repo = tmp_path / "repo"
    data = repo / "aaa_data"
    data.mkdir(parents=True)
    for index in range(20_050):
        (data / f"part_{index:05d}.bin").write_bytes(b"x")
    make_repo(repo, {"zz/train.sh": LAUNCH, "zz/train.py": "import deepspeed\n"})
    for _ in range(2):  # the first run reads the facts, the second takes them from the cache
        done = run_cli("check", "--isolated", "--format", "json", "--min-severity", "info",
                       "configs/ds_config.json", cwd=repo)
        said = done.stdout
        assert not [f for f in json.loads(said)["findings"] if f["code"] == "DS420"]
        assert "stopped after" not in said
    assert list(cache.glob("tree-*.marshal"))


def test_the_working_copy_wins_over_the_cache(tmp_path, cache):
    repo = make_repo(tmp_path / "repo", {"scripts/train.sh": LAUNCH, "train.py": "import deepspeed\n"})
    assert not no_consumer(repo)
    # an unstaged edit drops the reference: the cached facts of the commit no longer count
    (repo / "scripts" / "train.sh").write_text("deepspeed train.py\n", encoding="utf-8")
    assert no_consumer(repo)
    # a new file that git does not track yet names it again
    (repo / "run.sh").write_text(LAUNCH, encoding="utf-8")
    assert not no_consumer(repo)
    # ... unless .gitignore excludes it: an ignored file is no part of the repository
    (repo / ".gitignore").write_text("run.sh\n", encoding="utf-8")
    assert no_consumer(repo)


def test_under_pre_commit_the_repository_is_the_commit_being_made(tmp_path, cache, monkeypatch):
    # pre-commit (PRE_COMMIT=1) stashes unstaged edits before a hook runs: the index is what is
    # committed. A staged consumer counts, an untracked one is no part of the commit; git compares
    # the index with HEAD instead of statting every file (issue 32: cost independent of the tree)
    repo = make_repo(tmp_path / "repo", {"README.md": "# a project\n", "train.py": "import deepspeed\n"})
    monkeypatch.setenv("PRE_COMMIT", "1")
    assert no_consumer(repo)
    (repo / "run.sh").write_text(LAUNCH, encoding="utf-8")
    assert no_consumer(repo)  # untracked: not in the commit
    monkeypatch.delenv("PRE_COMMIT")
    assert not no_consumer(repo)  # as CI or a user runs it: the working copy, new files included
    monkeypatch.setenv("PRE_COMMIT", "1")
    git(repo, "add", "run.sh")
    assert not no_consumer(repo)  # staged: part of the commit
    git(repo, "commit", "-q", "-m", "launch")
    git(repo, "rm", "-q", "run.sh")  # staged removal
    assert no_consumer(repo)
    git(repo, "reset", "-q", "HEAD", "run.sh")
    git(repo, "checkout", "-q", "--", "run.sh")
    assert not no_consumer(repo)


def test_under_pre_commit_a_repository_without_commits_is_its_working_copy(tmp_path, cache, monkeypatch):
    # no HEAD to compare the index with (the first commit): git's full status, as outside pre-commit
    repo = tmp_path / "repo"
    (repo / "configs").mkdir(parents=True)
    (repo / "configs" / "ds_config.json").write_text(AUTO, encoding="utf-8")
    (repo / "train.py").write_text("import deepspeed\n", encoding="utf-8")
    (repo / "run.sh").write_text(LAUNCH, encoding="utf-8")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    monkeypatch.setenv("PRE_COMMIT", "1")
    assert not no_consumer(repo)


def test_commits_since_the_cache_are_read(tmp_path, cache):
    repo = make_repo(tmp_path / "repo", {"README.md": "# a project\n", "train.py": "import deepspeed\n"})
    assert no_consumer(repo)
    (repo / "scripts").mkdir()
    (repo / "scripts" / "train.sh").write_text(LAUNCH, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "launch")  # the cache was made at the first commit: git's diff brings it up
    assert not no_consumer(repo)
    git(repo, "rm", "-q", "scripts/train.sh")
    git(repo, "commit", "-q", "-m", "no launch")
    assert no_consumer(repo)
    git(repo, "checkout", "-q", "HEAD~1")  # back to a commit the cache has never seen
    assert not no_consumer(repo)


def test_a_damaged_or_missing_cache_costs_time_not_verdicts(tmp_path, cache, monkeypatch):
    repo = make_repo(tmp_path / "repo", {"scripts/train.sh": LAUNCH, "train.py": "import deepspeed\n"})
    assert not no_consumer(repo)
    (entry,) = cache.glob("tree-*.marshal")
    entry.write_bytes(b"\x00not marshal")
    assert not no_consumer(repo)
    entry.write_bytes(b"")
    assert not no_consumer(repo)
    shutil.rmtree(cache)
    monkeypatch.setenv("SHARDSHIFT_NO_CACHE", "1")
    assert not no_consumer(repo)
    assert not cache.exists()


def test_no_cache_flag_writes_nothing(tmp_path, cache):
    repo = make_repo(tmp_path / "repo", {"scripts/train.sh": LAUNCH, "train.py": "import deepspeed\n"})
    done = run_cli("check", "--isolated", "--no-cache", "configs/ds_config.json", cwd=repo)
    assert done.returncode in (0, 1), done.stderr
    assert not cache.exists()


def test_a_repository_inside_is_listed_with_its_files(tmp_path, cache):
    # a clone kept inside the repository (git lists it as one untracked folder): its files count
    repo = make_repo(tmp_path / "repo", {"train.py": "import deepspeed\n"})
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "train.sh").write_text("deepspeed ../train.py --deepspeed ../configs/ds_config.json\n", encoding="utf-8")
    git(inner, "init", "-q")
    git(inner, "add", "-A")
    git(inner, "commit", "-q", "-m", "inner")
    shutil.move(str(inner), str(repo / "launch"))
    from shardshift.context import tree

    tree.reset()
    listing = tree.tree_of(str(repo))
    assert listing.git and "launch/train.sh" in listing.paths and "train.py" in listing.paths
    assert listing.naming("ds_config.json") == [os.path.join(str(repo), "launch", "train.sh")]


def test_git_listing_matches_the_walk(tmp_path, cache, monkeypatch):
    # what git lists is what the walk outside git finds, less what .gitignore excludes
    files = {"a.py": "x = 'ds_config.json'\n", "pkg/b.sh": "deepspeed t.py --deepspeed $CFG\n",
             "build/gen.py": "", "docs/c.md": "see configs/ds_config.json\n", "noext": "", "logs/x.log": "",
             ".hidden/d.py": ""}
    repo = make_repo(tmp_path / "repo", {**files, ".gitignore": "logs/\n"})
    (repo / "untracked.yaml").write_text("deepspeed: configs/ds_config.json\n", encoding="utf-8")
    from shardshift.context import tree

    tree.reset()
    listed = tree.tree_of(str(repo))
    monkeypatch.setenv("SHARDSHIFT_NO_GIT", "1")
    tree.reset()
    walked = tree.tree_of(str(repo))
    assert listed.git and not walked.git
    assert set(walked.paths) - set(listed.paths) == {"logs/x.log"}
    assert set(listed.paths) - set(walked.paths) == set()
    for name in ("ds_config.json",):
        assert listed.naming(name) == walked.naming(name)
    assert listed.hinted("deepspeed-flag-runtime") == walked.hinted("deepspeed-flag-runtime") != []


def test_the_first_runs_search_by_git_finds_the_same_facts(tmp_path, cache, monkeypatch):
    # a large tree's first run asks `git grep` which files can hold a fact and reads only those
    files = {f"pkg/m{i}.py": f"x = {i}\n" for i in range(30)}
    files.update({"a.py": "x = 'ds_config.json'\n", "pkg/b.sh": "deepspeed t.py --deepspeed $CFG\n",
                  "c.md": "see configs/ds_config.json\n", "d.py": "TrainingArguments(deepspeed=args.ds)\n",
                  "e.py": "import tomllib\ntomllib.load(f)\n", "f.py": "register_train_spec(spec)\n",
                  "g.bin.txt": "binary\0 ds_config.json\n", "h.py": "import sys\nsys.modules['torchtitan.x'] = m\n"})
    repo = make_repo(tmp_path / "repo", files)
    (repo / "pkg" / "m1.py").write_text("y = 'ds_config.json'\n", encoding="utf-8")  # changed since the commit
    from shardshift.context import tree

    built = {}
    for bound in (10**9, 0):  # every file read, then only git grep's candidates
        monkeypatch.setattr(tree, "GREP_FROM_FILES", bound)
        monkeypatch.setenv("SHARDSHIFT_CACHE_DIR", str(tmp_path / f"cache{bound}"))
        tree.reset()
        listing = tree.tree_of(str(repo))
        built[bound] = (listing.paths, listing.facts)
    assert built[0] == built[10**9]
    facts = built[0][1]
    assert "g.bin.txt" not in facts and "pkg/m1.py" in facts and "pkg/m2.py" not in facts
    assert {"a.py", "pkg/b.sh", "c.md", "d.py", "e.py", "f.py", "h.py"} <= set(facts)


def test_find_answers_the_same_with_and_without_its_index():
    # the first look-ups scan the listing as one string; many look-ups build an index by file name
    from shardshift.context.tree import Tree

    paths = sorted(["a/train.py", "b/a/train.py", "xtrain.py", "train.py", "pkg/__init__.py", "pkg/sub/__init__.py",
                    "q/pkg/x.py", "q/pkg/x.pyc"])
    queries = ["train.py", "a/train.py", "pkg/__init__.py", "sub/__init__.py", "x.py", "pkg/x.py", "nothing.py"]
    scanned = Tree("/r", paths=list(paths))
    first = [scanned.find(q) for q in queries]
    indexed = Tree("/r", paths=list(paths))
    for index in range(20):
        indexed.find(f"other{index}.py")
    assert [indexed.find(q) for q in queries] == first
    assert first[0] == ["/r/a/train.py", "/r/b/a/train.py", "/r/train.py"] and first[-1] == []


def test_a_repository_without_commits_lists_its_untracked_files(tmp_path, cache):
    repo = tmp_path / "repo"
    (repo / "configs").mkdir(parents=True)
    (repo / "configs" / "ds_config.json").write_text(AUTO, encoding="utf-8")
    (repo / "train.py").write_text("import deepspeed\n", encoding="utf-8")
    git(repo, "init", "-q")
    assert no_consumer(repo)
    (repo / "run.sh").write_text(LAUNCH, encoding="utf-8")
    assert not no_consumer(repo)


def test_a_cache_folder_that_cannot_be_written_is_no_error(tmp_path, monkeypatch):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would be", encoding="utf-8")
    monkeypatch.setenv("SHARDSHIFT_CACHE_DIR", str(blocked / "shardshift"))
    repo = make_repo(tmp_path / "repo", {"scripts/train.sh": LAUNCH, "train.py": "import deepspeed\n"})
    assert not no_consumer(repo)
    done = run_cli("check", "--isolated", "configs/ds_config.json", cwd=repo)
    assert "Traceback" not in done.stderr


def test_a_symbolic_link_has_no_facts_of_its_own(tmp_path, cache, monkeypatch):
    # its target is listed itself, or is no file of the repository: git lists the link, not its text
    outside = tmp_path / "outside.sh"
    outside.write_text(LAUNCH, encoding="utf-8")
    repo = make_repo(tmp_path / "repo", {"docs/AGENTS.md": "see configs/ds_config.json\n", "train.py": ""})
    (repo / "CLAUDE.md").symlink_to("docs/AGENTS.md")
    (repo / "run.sh").symlink_to(outside)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "links")
    from shardshift.context import tree

    for bound in (10**9, 0):
        monkeypatch.setattr(tree, "GREP_FROM_FILES", bound)
        monkeypatch.setenv("SHARDSHIFT_CACHE_DIR", str(tmp_path / f"c{bound}"))
        tree.reset()
        listing = tree.tree_of(str(repo))
        assert {"CLAUDE.md", "run.sh", "docs/AGENTS.md"} <= set(listing.paths)
        assert set(listing.facts) == {"docs/AGENTS.md"}
    assert no_consumer(repo)  # a launch script outside the repository, linked in, is not read


def test_a_name_without_a_known_suffix_is_found_in_the_texts(tmp_path, cache):
    # the facts record names with a config or script suffix; another name is looked for in the texts
    repo = make_repo(tmp_path / "repo", {"scripts/train.sh": "bash ./launcher --config conf/run\n",
                                         "README.md": "no mention\n"})
    from shardshift.context import tree

    tree.reset()
    listing = tree.tree_of(str(repo))
    assert listing.naming("launcher") == [str(repo / "scripts" / "train.sh")]
    assert listing.naming("launcher", exact=True) == []


def test_each_file_is_read_at_most_once_per_run(tmp_path, cache, monkeypatch):
    # the facts, the consumer search, the readers' and the optimizer builder's searches share one read
    repo = make_repo(tmp_path / "repo", {
        "scripts/train.sh": LAUNCH, "train.py": "import deepspeed\nfrom lib import build\n"
                                                "engine = deepspeed.initialize(model=m, config='configs/ds_config.json')\n",
        "lib.py": "def build(cfg):\n    return cfg.get('wall_clock_breakdwon')\n"})
    (repo / "configs" / "ds_config.json").write_text(
        '{"train_micro_batch_size_per_gpu": 2, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}},'
        ' "wall_clock_breakdwon": true}\n', encoding="utf-8")
    from shardshift import files

    reads: dict[str, int] = {}
    real = files.read_text

    def counted(path, *args, **kwargs):
        reads[str(path)] = reads.get(str(path), 0) + 1
        return real(path, *args, **kwargs)

    monkeypatch.setattr(files, "read_text", counted)
    done = run_cli("check", "--isolated", "--no-cache", "--format", "json", "--min-severity", "info",
                   "configs/ds_config.json", cwd=repo)
    assert json.loads(done.stdout)["findings"], done.stderr
    context = {p: n for p, n in reads.items() if p.startswith(str(repo)) and not p.endswith(".toml")}
    assert context and max(context.values()) == 1, context


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_NAMES = st.sampled_from(["a.py", "b.sh", "c.md", "d.json", "e.txt", "run", "f g.yaml", "ü.py", "h.bin"])
_FOLDERS = st.sampled_from(["", "x/", "x/y/", "build/", ".hidden/", "z/"])
_TEXTS = st.sampled_from(["", "see ds_config.json\n", "deepspeed t.py --deepspeed $C\n", "import tomllib\ntomllib.load(f)\n",
                          "nothing\n", "bin\0ary ds_config.json\n"])
_FILES = st.dictionaries(st.tuples(_FOLDERS, _NAMES).map("".join), _TEXTS, min_size=1, max_size=8)


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(first=_FILES, second=_FILES, committed=_FILES, ignore_x=st.booleans())
def test_the_listing_is_the_working_copy_whatever_happened_since_the_cache(tmp_path_factory, first, second, committed,
                                                                          ignore_x):
    # a cache made at one commit, then another commit, then edits, removals and new files in the
    # working copy: the listing and its facts are those of the working copy, less what git ignores
    import os as _os
    import shutil as _shutil

    from shardshift.context import tree

    repo = tmp_path_factory.mktemp("prop")
    cache_dir = tmp_path_factory.mktemp("propcache")
    previous = _os.environ.get("SHARDSHIFT_CACHE_DIR")
    _os.environ["SHARDSHIFT_CACHE_DIR"] = str(cache_dir)
    try:
        def write(files):
            for rel, text in files.items():
                (repo / rel).parent.mkdir(parents=True, exist_ok=True)
                (repo / rel).write_text(text, encoding="utf-8")

        write({**first, ".gitignore": "x/\n" if ignore_x else "*.log\n"})
        git(repo, "init", "-q")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "one")
        tree.reset()
        tree.tree_of(str(repo))  # the cache, at the first commit
        for rel in list(first)[1::2]:  # removed by the second commit
            if rel not in committed and (repo / rel).exists():
                (repo / rel).unlink()
        write(committed)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", "two")
        for rel in list(first)[::2]:  # removed in the working copy
            if (repo / rel).exists():
                (repo / rel).unlink()
        write(second)  # changed and new files
        tree.reset()
        listing = tree.tree_of(str(repo))
        _os.environ["SHARDSHIFT_NO_GIT"] = "1"
        tree.reset()
        walked = tree.tree_of(str(repo))
        walked._ensure_facts()
        del _os.environ["SHARDSHIFT_NO_GIT"]
        ignored = {p for p in walked.paths if p.startswith("x/")} if ignore_x else set()
        expected = sorted(set(walked.paths) - ignored - {".gitignore"} | ({".gitignore"} & set(walked.paths)))
        assert listing.paths == expected
        assert listing.facts == {rel: f for rel, f in walked.facts.items() if rel not in ignored}
    finally:
        if previous is None:
            _os.environ.pop("SHARDSHIFT_CACHE_DIR", None)
        else:
            _os.environ["SHARDSHIFT_CACHE_DIR"] = previous
        _os.environ.pop("SHARDSHIFT_NO_GIT", None)
        _shutil.rmtree(repo, ignore_errors=True)


def test_a_cache_entry_of_the_wrong_shape_is_read_again(tmp_path, cache):
    # a cache file that is valid marshal but not the listing's shape costs a read, never a traceback
    import marshal

    repo = make_repo(tmp_path / "repo", {"scripts/train.sh": LAUNCH, "train.py": "import deepspeed\n"})
    assert not no_consumer(repo)
    (entry,) = cache.glob("tree-*.marshal")
    from shardshift.context import tree

    good = marshal.loads(entry.read_bytes())
    for broken in ({**good, "paths": 7}, {**good, "facts": []}, {**good, "tree": None}, [good]):
        entry.write_bytes(marshal.dumps(broken))
        assert not no_consumer(repo)
    assert tree._load(str(entry)) is not None  # the last run wrote a good one again
