"""`--fix` writes as an editor saves: a failed write, a concurrent save, links and files outside
the checked tree never lose or change what the user has."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys

from test_fix import ORIGINAL, _expected

from shardshift import fix

from conftest import run_cli


def _fixable(folder) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "ds_config.json"
    path.write_bytes(ORIGINAL.encode())
    return str(path)


def test_a_write_that_fails_part_way_leaves_the_original_byte_identical(tmp_path):
    path = _fixable(tmp_path)
    limit = len(ORIGINAL.encode()) // 2  # any file written grows past this: the write fails half done

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a kill, as on a full disk
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-m", "shardshift", "check", "--fix", "--isolated", path],
                          capture_output=True, text=True, preexec_fn=small_files, env=env, timeout=120)
    assert "Traceback" not in done.stderr
    assert "not fixed: cannot write the fixes" in done.stderr
    assert done.returncode == 1
    assert open(path, "rb").read() == ORIGINAL.encode()
    assert os.listdir(tmp_path) == ["ds_config.json"]  # no temporary file left behind


def test_a_save_made_after_the_file_was_read_survives(tmp_path):
    path = _fixable(tmp_path)
    saved = ORIGINAL.replace('"train_batch": 32', '"train_batch_size": 32')
    with open(path, "w", encoding="utf-8") as handle:  # the editor saves while the fixes are computed
        handle.write(saved)
    why = fix.write(path, _expected(ORIGINAL), ORIGINAL, [str(tmp_path)])
    assert why is not None and "changed since it was read" in why
    assert open(path, encoding="utf-8").read() == saved


def test_a_successful_fix_replaces_the_file_atomically_and_keeps_its_mode(tmp_path):
    path = _fixable(tmp_path)
    os.chmod(path, 0o640)
    inode = os.stat(path).st_ino
    done = run_cli("check", "--fix", "--isolated", path)
    assert "not fixed" not in done.stderr
    assert open(path, encoding="utf-8").read() == _expected(ORIGINAL)
    assert os.stat(path).st_mode & 0o777 == 0o640
    assert os.stat(path).st_ino != inode  # a new file renamed over the old one, never truncated in place
    assert os.listdir(tmp_path) == ["ds_config.json"]


def test_a_symlink_to_a_file_outside_the_tree_is_never_written(tmp_path):
    outside = _fixable(tmp_path / "elsewhere")
    tree = tmp_path / "tree"
    tree.mkdir()
    os.symlink(outside, tree / "ds_config.json")
    for args in (("--fix",), ("--fix", "--fix-links")):
        done = run_cli("check", *args, "--isolated", str(tree))
        assert "not fixed" in done.stderr, done.stderr
        assert done.returncode == 1
        assert open(outside, "rb").read() == ORIGINAL.encode()
        assert os.path.islink(tree / "ds_config.json")


def test_a_symlink_inside_the_tree_is_written_at_its_target_only_when_asked(tmp_path):
    real = _fixable(tmp_path / "configs")
    os.symlink(real, tmp_path / "ds_link.json")
    done = run_cli("check", "--fix", "--isolated", str(tmp_path / "ds_link.json"))
    assert "symbolic link" in done.stderr and open(real, "rb").read() == ORIGINAL.encode()
    done = run_cli("check", "--fix", "--fix-links", "--isolated", str(tmp_path))
    assert "not fixed" not in done.stderr, done.stderr
    assert open(real, encoding="utf-8").read() == _expected(ORIGINAL)
    assert os.path.islink(tmp_path / "ds_link.json")  # the link itself stays a link


def test_a_hard_linked_file_keeps_its_links(tmp_path):
    path = _fixable(tmp_path / "tree")
    other = tmp_path / "elsewhere.json"
    os.link(path, other)
    done = run_cli("check", "--fix", "--isolated", str(tmp_path / "tree"))
    assert "hard link" in done.stderr and other.read_bytes() == ORIGINAL.encode()
    done = run_cli("check", "--fix", "--fix-links", "--isolated", str(tmp_path / "tree"))
    assert "not fixed" not in done.stderr, done.stderr
    assert other.read_text() == _expected(ORIGINAL)  # the same file: both names see the fix
    assert os.stat(path).st_ino == os.stat(other).st_ino


def test_a_file_outside_the_checked_roots_is_refused(tmp_path):
    path = _fixable(tmp_path / "a")
    why = fix.write(path, _expected(ORIGINAL), ORIGINAL, [str(tmp_path / "b")])
    assert why == "it lies outside the checked tree"
    assert open(path, "rb").read() == ORIGINAL.encode()
