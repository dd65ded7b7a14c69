"""MG301 (src/shardshift/rules/megatron/refused.py): Megatron's argument checks, one table row each.

Each row names the coverage-map site it mirrors; the map (src/shardshift/data/coverage/megatron.tsv) gives
that site `rule: MG301` and one bad fixture, on which tests/test_coverage_map.py runs Megatron's own code
(it must fail at the site there and not on the good fixtures) and shardshift (it must report MG301). Here:
the table and the map agree, each bad fixture gets exactly its row's finding and the good one none, and a
value the arguments do not decide is not judged.
"""

from __future__ import annotations

import pytest

from shardshift import coverage
from shardshift.rules.megatron.refused import STOPS, refusals

from conftest import FIXTURES, ROOT, check_json

RULES = FIXTURES / "megatron" / "rules" / "MG301"
# rows of implicit sites (refusals/implicit.py) name this table's sites, not the map's
IMPLICIT = ROOT / "src" / "shardshift" / "data" / "coverage" / "megatron-implicit.tsv"


def _mapped() -> dict[str, coverage.Verdict]:
    return {site: v for site, v in coverage.load("megatron").items() if "MG301" in v.codes}


def _implicit(site: str) -> bool:
    """An implicit site's id (src/shardshift/data/coverage/megatron-implicit.tsv): its exception type first."""
    return site.split(" ", 1)[0].endswith(("Error", "Exception"))


def test_each_row_is_a_site_of_the_map_that_names_mg301_with_its_own_bad_fixture():
    rows = refusals()
    sites = [row.site for row in rows]
    assert len(sites) == len(set(sites)), "a site with two rows"
    implicit = {line.split("\t")[0]: line.split("\t")[1] for line in IMPLICIT.read_text(encoding="utf-8").splitlines()
                if line.strip() and not line.startswith("#")}
    assert all(implicit[site] == "rule: MG301" for site in sites if _implicit(site))
    sites = [site for site in sites if not _implicit(site)]
    mapped = _mapped()
    assert set(sites) == set(mapped)
    cases = [v.case.split()[0] for v in mapped.values()]
    assert len(cases) == len(set(cases)), "two sites share a bad fixture"
    assert {p.relative_to(FIXTURES).as_posix() for p in RULES.rglob("bad*")} == set(cases)


def _messages(output) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for finding in output["findings"]:
        if finding["code"] == "MG301":
            found.setdefault(finding["file"].split("MG301/", 1)[-1], []).append(finding["message"])
    return found


STAGES = tuple(STOPS)  # in the order pretrain meets them


def test_each_bad_fixture_gets_its_rows_finding_and_none_of_a_check_megatron_passes_before_it():
    """Megatron stops at the first check that fails: on a row's bad fixture, where the map says it fails, no row of a
    check before that one (an earlier stage, or an earlier line of the same function) may fire. Rows of later checks
    may: each fails too once the first is fixed. The good fixtures get no MG301 finding."""
    mapped = _mapped()
    by_site = {row.site: row for row in refusals()}

    def order(row):
        return STAGES.index(row.stage), mapped[row.site].site.rsplit(":", 2)[0], mapped[row.site].line

    fixture_of = {v.case.split()[0].split("MG301/", 1)[-1]: by_site[site] for site, v in mapped.items()}
    _, output = check_json("--isolated", "--no-cache", *sorted(str(p) for p in RULES.rglob("*.sh")))
    messages = _messages(output)
    assert not any(name.endswith("good.sh") for name in messages), messages
    for name, row in fixture_of.items():
        found = messages.get(name, [])
        assert sum(row.says in m for m in found) == 1, (name, found)
        for message in found:  # the rows that may have written it (two checks of one Megatron message say the same)
            rows = [r for r in refusals() if r.says in message]
            assert row in rows or all(order(r) > order(row) for r in rows), (name, "fires before its check", message)
    finding = next(f for f in output["findings"] if f["code"] == "MG301")
    assert finding["severity"] == "error"


@pytest.mark.parametrize("prefix, suffix", [("EXTRA_ARGS=$1\n", " $EXTRA_ARGS")])
def test_a_flag_an_unresolved_splice_may_give_is_not_judged(tmp_path, prefix, suffix):
    text = (RULES / "validate_a" / "bad_attention_backend_local.sh").read_text(encoding="utf-8")
    script = tmp_path / "run.sh"
    script.write_text(text.replace("#!/bin/bash\n", "#!/bin/bash\n" + prefix).rstrip("\n") + suffix + "\n")
    _, output = check_json("--isolated", "--no-cache", str(script))
    assert _messages(output) == {}


@pytest.mark.parametrize("flags", [
    "--attention-backend local --spec",  # an empty list where a row reads the first word
    "--micro-batch-size 2 --train-iters 5 --step-batch-size-schedule '0:16 1e400:32'",  # a threshold of infinity
    "--num-experts 4 --moe-layer-freq '[1]*99999999999999999999'",
])
def test_a_value_no_row_can_read_ends_in_findings_not_a_traceback(tmp_path, flags):
    script = tmp_path / "run.sh"
    script.write_text(f"torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 4 {flags}\n", encoding="utf-8")
    code, output = check_json("--isolated", "--no-cache", str(script))
    assert code in (0, 1) and "findings" in output
