"""The documentation site and the links into it.

docs_url (unmarked, fast): the base URL comes from `docs-url` in [tool.shardshift], else the
package metadata's `Documentation`, else https://shardshift.dev; a bad `docs-url` is a
configuration error (exit 2); SARIF and `explain` link to `<base>/rules/<CODE>/`.

The site (marked `oracle`: a full `mkdocs build --strict` costs ~7 s of CPU, and the SARIF run
over fixtures/ ~4 s more; CI runs it): one page per rule that `shardshift rules` lists, holding
its code and its bad fixture's text, no other rule pages; every SARIF `helpUri` resolves to a
built page; a page per registered format; the API page names every public function.
"""

from __future__ import annotations

import html
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from shardshift import docs_url

from conftest import ROOT, run_cli

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

BAD_DS_CONFIG = '{"train_batch_size": 3, "zero_optimisation": {"stage": 2}}\n'


def _project(tmp_path: Path, table: str) -> Path:
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "pyproject.toml").write_text(f"[tool.shardshift]\n{table}\n")
    (tmp_path / "ds_config.json").write_text(BAD_DS_CONFIG)
    return tmp_path


# --- docs_url ------------------------------------------------------------------------------------


def test_rule_url_is_the_rule_page_under_the_base():
    assert docs_url.rule_url("ds101", base="https://docs.example.com/x/") == "https://docs.example.com/x/rules/DS101/"


def test_config_key_wins_over_metadata_over_default(tmp_path, monkeypatch):
    plain = tmp_path / "plain"
    plain.mkdir()
    configured = _project(tmp_path / "configured", 'docs-url = "https://mirror.example.org/shardshift/"')
    monkeypatch.setattr(docs_url, "package_url", lambda: "https://meta.example.com/docs")
    assert docs_url.base_url(str(plain)) == "https://meta.example.com/docs"
    assert docs_url.rule_url("SS001", str(plain)) == "https://meta.example.com/docs/rules/SS001/"
    assert docs_url.base_url(str(configured)) == "https://mirror.example.org/shardshift"
    monkeypatch.setattr(docs_url, "package_url", lambda: None)
    assert docs_url.base_url(str(plain)) == docs_url.DEFAULT == "https://shardshift.dev"
    assert docs_url.base_url(str(configured)) == "https://mirror.example.org/shardshift"


def test_package_metadata_documentation_entry():
    entries = ["Homepage, https://example.com", "Documentation, https://docs.example.com/s/", "Source, https://x.y"]
    assert docs_url.documentation_entry(entries) == "https://docs.example.com/s"
    assert docs_url.documentation_entry(["Homepage, https://example.com"]) is None
    # the package declares the site mkdocs.yml builds
    urls = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]
    site_url = next(line.split(":", 1)[1].split("#")[0].strip() for line in (ROOT / "mkdocs.yml").read_text().splitlines()
                    if line.startswith("site_url:"))
    assert urls["Documentation"].rstrip("/") == site_url.rstrip("/") == docs_url.DEFAULT


@pytest.mark.parametrize("value", ['"ftp://example.com"', '"docs.example.com"', "5", '"https://"', '"https://a b.com"'])
def test_a_bad_docs_url_is_a_configuration_error(tmp_path, value):
    _project(tmp_path, f"docs-url = {value}")
    for args in (("check", "ds_config.json"), ("check", "--format", "sarif", "ds_config.json"), ("explain", "DS101")):
        done = run_cli(*args, cwd=tmp_path)
        assert done.returncode == 2, (args, done.stdout[-300:])
        assert "docs-url must be an http(s) URL" in done.stderr and "Traceback" not in done.stderr


def test_sarif_and_explain_link_to_the_configured_site(tmp_path):
    _project(tmp_path, 'docs-url = "https://mirror.example.org/shardshift/"')
    done = run_cli("check", "--format", "sarif", "ds_config.json", cwd=tmp_path)
    driver = json.loads(done.stdout)["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == "https://mirror.example.org/shardshift"
    assert {r["helpUri"] for r in driver["rules"]} == {
        f"https://mirror.example.org/shardshift/rules/{r['id']}/" for r in driver["rules"]}
    explained = run_cli("explain", "ds201", cwd=tmp_path)
    assert explained.returncode == 0
    assert explained.stdout.rstrip().splitlines()[-1] == "Documentation: https://mirror.example.org/shardshift/rules/DS201/"
    # --isolated ignores the file's docs-url as it ignores every option
    isolated = run_cli("check", "--isolated", "--format", "sarif", "ds_config.json", cwd=tmp_path)
    assert "mirror.example.org" not in isolated.stdout


def test_the_check_text_path_does_not_load_the_docs_url_machinery():
    probe = ("import io, contextlib, sys\nfrom shardshift import cli\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             "    cli.main(['check', '--isolated', 'fixtures/deepspeed/zero2_bf16_adamw.json'])\n"
             "print(sorted(m for m in ('shardshift.docs_url', 'importlib.metadata', 'mkdocs') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# --- the site ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    pytest.importorskip("mkdocs", reason="the docs extra (mkdocs) is not installed")
    pytest.importorskip("material", reason="the docs extra (mkdocs-material) is not installed")
    out = tmp_path_factory.mktemp("site")
    started = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=600,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    ended = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"mkdocs build --strict: {ended.ru_utime + ended.ru_stime - started.ru_utime - started.ru_stime:.1f} s of CPU")
    return out


def _text(page: Path) -> str:
    return html.unescape(page.read_text(encoding="utf-8"))


@pytest.mark.oracle
def test_one_page_per_rule_with_its_bad_example(site):
    from shardshift.docs.rule_pages import MAX_LINES, examples
    from shardshift.rules import all_rules

    codes = {rule.code for rule in all_rules()}
    built = {p.name for p in (site / "rules").iterdir() if p.is_dir()}
    assert built == codes  # no rule without a page, no page without a rule
    for code in sorted(codes):
        text = _text(site / "rules" / code / "index.html")
        assert code in text
        bad = [path for kind, path in examples(code, ROOT) if kind == "bad"]
        assert bad, f"{code} has no bad fixture"
        for line in bad[0].read_text(encoding="utf-8").splitlines()[:MAX_LINES]:
            assert line.strip() in text, f"{code}: {bad[0].name}: {line!r} is not on its page"


@pytest.mark.oracle
def test_every_sarif_help_uri_resolves_to_a_built_page(site):
    done = run_cli("check", "--isolated", "--format", "sarif", "fixtures/", cwd=ROOT)
    run = json.loads(done.stdout)["runs"][0]
    base = run["tool"]["driver"]["informationUri"].rstrip("/")
    uris = {rule["helpUri"] for rule in run["tool"]["driver"]["rules"]}
    assert run["results"] and {r["ruleId"] for r in run["results"]} <= {r["id"] for r in run["tool"]["driver"]["rules"]}
    for uri in uris:
        assert uri.startswith(base + "/") and uri.endswith("/"), uri
        page = site / uri[len(base) + 1:] / "index.html"
        assert page.is_file(), f"{uri} has no page ({page})"
    # a rule whose findings carry a safe fix says so on its page
    fixable = {r["ruleId"] for r in run["results"] if r.get("properties", {}).get("fixKind")}
    assert fixable
    for code in fixable:
        assert "yes: some of its findings carry a safe fix" in _text(site / "rules" / code / "index.html"), code


@pytest.mark.oracle
def test_a_page_per_format_and_the_api_page_names_every_public_function(site):
    import shardshift
    from shardshift.docs.reference_pages import public_functions
    from shardshift.formats import READERS

    for name in READERS:
        assert f"(<code>{name}</code>)" in _text(site / "formats" / name / "index.html")
    api = _text(site / "reference" / "api" / "index.html")
    names = set(public_functions()) | {n for n in shardshift.__all__ if not n.startswith("__")}
    assert names and all(f"def {n}(" in api or f"class {n}(" in api for n in names), names
    cli = _text(site / "reference" / "cli" / "index.html")
    assert all(f"shardshift {command}" in cli for command in ("check", "convert", "plan", "diff", "rules", "explain"))


@pytest.mark.oracle
def test_hand_written_pages_carry_the_readme_sections_they_name(site):
    from shardshift.docs.hook import README_SECTION, readme_section

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    named = [(page, heading) for page in (ROOT / "docs").glob("*.md")
             for heading in README_SECTION.findall(page.read_text(encoding="utf-8"))]
    assert named
    for page, heading in named:
        built = _text(site / page.stem / "index.html")
        assert "<!-- README:" not in built
        for line in readme_section(readme, heading).splitlines():
            if line.startswith("- ") or (line[:1].isalpha() and "`" not in line and "[" not in line):
                words = line.split()[:6]  # prose lines: their first words reach the page
                assert " ".join(words) in " ".join(built.split()), f"{page.name}: {line!r}"


def test_a_readme_section_that_is_gone_fails_the_build():
    pytest.importorskip("mkdocs", reason="the docs extra (mkdocs) is not installed")
    from mkdocs.exceptions import PluginError

    from shardshift.docs.hook import readme_section

    readme = "# x\n\n## Kept\n\ntext\n\n### Sub\n\n```sh\n### not a heading\n```\n\n## Next\n"
    assert readme_section(readme, "Kept") == "text\n\n## Sub\n\n```sh\n### not a heading\n```\n"  # under the title
    assert readme_section(readme, "Kept", level=2).startswith("text\n\n### Sub\n")  # under a page's `##`
    with pytest.raises(PluginError, match="no section '## Gone'"):
        readme_section(readme, "Gone")
