"""``analysis.sequential``: a sealed sequential comparison run look by look through the CLI,
stopped early on a planned look when one engine is far better, run to max n when the two are
the same, and replayed by the audit, which FAILs a ledger whose looks were edited or deleted and
rows answered past the stop."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAI
from tests.tasks._support import arith_suite, cli, git, project

from sealedeval.errors import UserError
from sealedeval.stages.sequential import parse_plan
from sealedeval.stats._sequential import STOP_A, cs_radius, mixture_rho
from sealedeval.store import ledger

ITEMS = [{"id": f"q{i:02d}", "input": f"{i} + {i + 3}", "target": 2 * i + 3} for i in range(1, 41)]
LOOKS = [8, 16, 24, 32, 40]
ENGINES = ["reference", "weak"]


# -- the plan, checked --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"compare": ["a", "b"], "looks": [10, 5]}, "x.looks: must be positive and strictly"),
        ({"compare": ["a", "b"], "looks": [5, 50], "max_n": 40}, "x.looks: 50 is beyond max_n 40"),
        ({"compare": ["a", "c"], "looks": [5]}, "x.compare: 'c' is not an answering engine"),
        ({"compare": ["a", "b"], "looks": [5], "alpha": 1.0}, "x.alpha: must lie in (0, 1)"),
        ({"compare": ["a", "b"], "looks": [5], "alpha": 0}, "x.alpha: must lie in (0, 1)"),
        ({"compare": ["a", "a"], "looks": [5]}, "x.compare: expected two different engines"),
    ],
)
def test_a_bad_plan_is_one_line_naming_the_key(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError) as e:
        parse_plan("x", raw, ["a", "b"])
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


def test_max_n_beyond_the_last_look_is_a_look_of_its_own() -> None:
    sp = parse_plan("x", {"compare": ["a", "b"], "looks": [5, 10], "max_n": 30}, ["a", "b"])
    assert sp is not None and (sp.looks, sp.max_n, sp.alpha) == ((5, 10, 30), 30, 0.05)


def test_the_suite_config_rejects_an_engine_it_does_not_run(tmp_path: Path) -> None:
    suite = arith_suite(analysis={"sequential": {"compare": ["reference", "x"], "looks": [4]}})
    root = project(tmp_path / "p", {"arith": suite})
    out = cli(root, "seal", check=False)
    assert out.returncode == 2
    assert "suites.arith.analysis.sequential.compare: 'x' is not an answering engine" in (
        out.stderr
    )


# -- end to end ---------------------------------------------------------------------------------
@pytest.fixture
def weak() -> Iterator[FakeOpenAI]:
    """An engine that is always wrong: the true difference reference − weak is 1."""
    with FakeOpenAI(responder=lambda body: "0", latency_s=0.0) as server:
        yield server


def _engines(fake: FakeOpenAI) -> dict[str, Any]:
    return {
        "reference": {"kind": "reference", "concurrency": 4},
        "weak": {
            "kind": "openai_chat",
            "base_url": fake.base_url,
            "model": "weak-model",
            "concurrency": 2,
            "max_retries": 0,
            "timeout_s": 10,
        },
    }


def _sealed(root: Path) -> Path:
    cli(root, "seal")
    git(root, "add", "rubric.lock", ".sealedeval")
    git(root, "commit", "-qm", "Seal rubric and the sequential plan")
    return root


def _audit(root: Path) -> tuple[int, dict[str, str]]:
    out = cli(root, "audit", check=False)
    rows = {}
    for line in out.stdout.splitlines():
        for status in ("PASS", "FAIL", "WARN"):
            if status in line:
                rows[line.split(status)[0].strip(" |")] = line
    return out.returncode, rows


def _rechain(root: Path, edit: Any) -> None:
    """Rewrite the ledger with ``edit`` applied to its entries, every hash recomputed: a
    consistent forgery the chain check alone cannot see."""
    path = root / ledger.LEDGER_NAME
    entries = ledger.parse(path.read_text())
    edit(entries)
    prev = ledger.GENESIS
    lines = []
    for i, e in enumerate(entries):
        e["seq"], e["prev"] = i, prev
        e["hash"] = ledger.entry_hash(e)
        prev = e["hash"]
        lines.append(json.dumps(e, separators=(",", ":"), sort_keys=True))
    path.write_text("\n".join(lines) + "\n")
    assert not ledger.chain_problems(ledger.read(root))


@pytest.mark.slow
def test_a_true_difference_stops_at_the_planned_look_and_the_audit_replays_it(
    tmp_path: Path, weak: FakeOpenAI
) -> None:
    plan = {"compare": ENGINES, "looks": LOOKS, "max_n": 40, "alpha": 0.05}
    suite = arith_suite(engines=ENGINES, analysis={"sequential": plan})
    root = _sealed(project(tmp_path / "seq", {"arith": suite}, engines=_engines(weak), items=ITEMS))
    out = cli(root, "run", "--sequential", "arith", "--no-progress")
    # the first look whose confidence sequence for a mean of 1 excludes 0, written out
    rho = mixture_rho(40 * 4 / 4, 0.05)
    first = next(n for n in LOOKS if 1.0 - cs_radius(n, 0.05, rho, 2.0) > 0)
    assert first == 16 < 40
    assert weak.count() == first  # the weak engine was asked exactly the items up to the stop
    assert "stopped at n = 16 of 40 (24 items saved)" in out.stdout

    looks = [e["sequential"] for e in ledger.read(root) if "sequential" in e]
    assert [(lk["look"], lk["n"], lk["decision"]) for lk in looks] == [
        (1, 8, "continue"),
        (2, 16, STOP_A),
    ]
    assert looks[1]["lo"] > 0 >= looks[0]["lo"] and looks[1]["estimate"] == 1.0

    cli(root, "publish")
    code, rows = _audit(root)
    assert code == 0, rows
    assert "PASS" in rows["sequential stop"] and "2 looks replayed" in rows["sequential stop"]
    sq = json.loads((root / "results/result.json").read_text())["suites"]["arith"]["analysis"][
        "sequential"
    ]
    assert (sq["stopped_at"], sq["decision"], sq["items_saved"]) == (16, STOP_A, 24)
    assert (sq["calls_made"], sq["calls_at_max_n"], sq["calls_saved"]) == (32, 80, 48)
    assert sq["violation"] is None
    report = (root / "results/report.md").read_text()
    assert "### Sequential comparison" in report and "48 answer calls not made" in report

    # a rerun is a no-op: the same looks, no call
    cli(root, "run", "arith", "--engine", "weak", "--no-progress")
    assert weak.count() == first
    original = (root / ledger.LEDGER_NAME).read_text()

    # tampered: the stop recorded as "continue"
    def unstop(entries: list[dict[str, Any]]) -> None:
        for e in entries:
            if (e.get("sequential") or {}).get("n") == 16:
                e["sequential"]["decision"] = "continue"

    _rechain(root, unstop)
    code, rows = _audit(root)
    assert code != 0 and "FAIL" in rows["sequential stop"], rows
    assert "look 2 at n = 16: the ledger says 'continue'" in rows["sequential stop"]

    # tampered: the stop deleted, as if the run had not looked there
    def drop(entries: list[dict[str, Any]]) -> None:
        for e in entries:
            if (e.get("sequential") or {}).get("n") == 16:
                del e["sequential"]

    (root / ledger.LEDGER_NAME).write_text(original)
    _rechain(root, drop)
    code, rows = _audit(root)
    assert "FAIL" in rows["sequential stop"], rows
    assert "the look at n = 16 (stop: a better) is not in the ledger" in rows["sequential stop"]

    # rows beyond the stop: both engines asked up to the third look behind the driver's back
    (root / ledger.LEDGER_NAME).write_text(original)
    from sealedeval.config import load_config
    from sealedeval.stages.run import Target, plan, run_suite
    from sealedeval.stages.sequential import first_items

    cfg = load_config(root)
    ids = [str(i["id"]) for i in plan(cfg, "arith").items]
    for eng in ENGINES:
        run_suite(cfg, "arith", eng, progress=False, target=Target(items=first_items(ids, 24)))
    assert weak.count() == 24
    code, rows = _audit(root)
    assert "FAIL" in rows["sequential stop"], rows
    assert (
        "went on to n = 24 after the rule said 'stop: a better' at n = 16"
        in (rows["sequential stop"])
    )


@pytest.mark.slow
def test_no_difference_runs_to_max_n_through_the_workflow_path(tmp_path: Path) -> None:
    engines = {
        "reference": {"kind": "reference", "concurrency": 4},
        "twin": {"kind": "reference", "model": "twin", "concurrency": 4},
    }
    plan = {"compare": ["reference", "twin"], "looks": [4, 8], "max_n": 12}
    suite = arith_suite(engines=["reference", "twin"], analysis={"sequential": plan})
    root = _sealed(project(tmp_path / "null", {"arith": suite}, engines=engines))
    # what a workflow run job does: one engine named; the driver runs both, look by look
    out = cli(root, "run", "arith", "--engine", "twin", "--no-progress")
    assert "stopped at n = 12 of 12 (0 items saved)" in out.stdout
    looks = [e["sequential"] for e in ledger.read(root) if "sequential" in e]
    assert [(lk["n"], lk["decision"]) for lk in looks] == [
        (4, "continue"),
        (8, "continue"),
        (12, "exhausted"),
    ]
    cli(root, "publish")
    code, rows = _audit(root)
    assert code == 0 and "PASS" in rows["sequential stop"], rows
    sq = json.loads((root / "results/result.json").read_text())["suites"]["arith"]["analysis"][
        "sequential"
    ]
    assert (sq["stopped_at"], sq["items_saved"], sq["calls_saved"]) == (12, 0, 0)
