"""The source of one release of a framework, as text, without installing or importing it: the wheel
(or, where a release has none, the source archive) is downloaded with `pip download --no-deps` into a
cache folder, and its Python files are read out of the archive. Used by the defaults tables' release
check (tests/test_defaults_releases.py) and the transformers table's generator.

    from release_sources import source_files
    files = source_files("deepspeed", "0.16.0")           # {"deepspeed/runtime/constants.py": text, ...}
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

CACHE = Path(os.environ.get("SHARDSHIFT_RELEASE_CACHE", Path.home() / ".cache" / "shardshift-release-sources"))


def download(package: str, version: str, cache: Path = CACHE) -> Path:
    """The distribution file of `package==version` in `cache` (downloaded once)."""
    cache.mkdir(parents=True, exist_ok=True)
    stem = package.replace("-", "_")
    found = _cached(cache, package, stem, version)
    if found is None:
        for extra in (["--only-binary", ":all:"], ["--no-binary", ":all:"]):
            done = subprocess.run([sys.executable, "-m", "pip", "download", f"{package}=={version}", "--no-deps",
                                   "--no-build-isolation", "-q", "-d", str(cache), *extra],
                                  capture_output=True, text=True, timeout=600)
            found = _cached(cache, package, stem, version)
            if found is not None:
                break
        if found is None:
            raise RuntimeError(f"pip could not download {package}=={version}: {done.stderr[-500:]}")
    return found


def _cached(cache: Path, package: str, stem: str, version: str) -> Path | None:
    for name in (stem, package, package.replace("_", "-")):
        for pattern in (f"{name}-{version}-*.whl", f"{name}-{version}.tar.gz", f"{name}-{version}.zip"):
            matches = sorted(cache.glob(pattern))
            if matches:
                return matches[0]
    return None


def source_files(package: str, version: str, cache: Path = CACHE) -> dict[str, str]:
    """Every .py file of the release, by its path inside the installed package ("pkg/mod.py"). The
    release installed here (an oracle of the tests) is read where it is installed: no download."""
    installed = _installed(package, version)
    if installed is not None:
        return installed
    archive = download(package, version, cache)
    files: dict[str, str] = {}
    if archive.suffix == ".whl" or archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as handle:
            for name in handle.namelist():
                if name.endswith(".py"):
                    files[_inside(name, archive.suffix == ".zip")] = handle.read(name).decode("utf-8", "replace")
    else:
        with tarfile.open(archive) as handle:
            for member in handle.getmembers():
                if member.isfile() and member.name.endswith(".py"):
                    data = handle.extractfile(member)
                    if data is not None:
                        files[_inside(member.name, True)] = io.TextIOWrapper(data, "utf-8", "replace").read()
    return files


def release_wheels(package: str, first: tuple[int, ...], cache: Path = CACHE):
    """(version as written, the open wheel) of every release of `package` shardshift knows from `first` on,
    oldest first, each wheel downloaded into `cache` once (the generators of the per-release tables)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
    from shardshift.context.releases import known_releases

    for version in (v for v in known_releases(package) if v >= first):
        shown = ".".join(map(str, version))
        with zipfile.ZipFile(download(package, shown, cache)) as archive:
            yield shown, archive


def _installed(package: str, version: str) -> dict[str, str] | None:
    from importlib import metadata

    try:
        distribution = metadata.distribution(package)
    except metadata.PackageNotFoundError:
        return None
    if distribution.version != version:
        return None
    files = {}
    for entry in distribution.files or ():
        if str(entry).endswith(".py") and not str(entry).startswith(".."):
            try:
                files[str(entry).replace("\\", "/")] = Path(distribution.locate_file(entry)).read_text("utf-8", "replace")
            except OSError:
                continue
    return files or None


def _inside(name: str, source_archive: bool) -> str:
    """The path as installed: a source archive's top folder (and a `src/` layout) left out."""
    parts = name.split("/")
    if source_archive:
        parts = parts[1:]
        if parts and parts[0] == "src":
            parts = parts[1:]
    return "/".join(parts)
