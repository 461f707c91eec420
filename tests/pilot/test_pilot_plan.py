"""``sealedeval pilot`` and ``sealedeval plan`` in a project made by ``sealedeval init``, with the
``reference`` engine and an ``openai_chat`` engine on the loopback fake server.

A pilot before the seal must leave the study untouched: the sealed run after it is not refused,
publish and the audit pass, the audit discloses the pilot without counting it, and no pilot part
enters result.json's manifest — also when the pilot store is deleted afterwards. ``plan`` must
give exactly what ``stats/_mde.py`` and ``stats/_power.py`` give on the pilot's paired scores,
and other numbers when the pilot's answers change.
"""

from __future__ import annotations

import json
import re
import shutil
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from tests.fakes.openai_server import FakeOpenAI, last_user_content
from tests.tasks._support import cli, git, write_jsonl

from sealedeval import stats
from sealedeval.stages.pilot import pilot_order

N_ITEMS = 30
SEED = 7
ITEMS = [
    {"id": f"q{i:02d}", "input": f"{i} + {i + 3}", "target": 2 * i + 3}
    for i in range(1, N_ITEMS + 1)
]
ALL_IDS = [str(it["id"]) for it in ITEMS]


class Answers:
    """The fake engine's answers: wrong (off by one) on the first operands in ``wrong``; with
    ``flaky``, wrong on every second call of those operands (a spread within an item)."""

    def __init__(self, wrong: set[int], *, flaky: set[int] | None = None) -> None:
        self.wrong = wrong
        self.flaky = flaky or set()
        self.calls: Counter[int] = Counter()
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        m = re.search(r"What is (\d+) \+ (\d+)\?", last_user_content(body))
        assert m, body
        a, b = int(m.group(1)), int(m.group(2))
        with self.lock:
            self.calls[a] += 1
            n = self.calls[a]
        off = a in self.wrong or (a in self.flaky and n % 2 == 0)
        return str(a + b + (1 if off else 0))


@pytest.fixture
def answers() -> Answers:
    return Answers({1, 2, 4, 6, 7, 9, 12, 15, 20, 21, 25, 28}, flaky={3, 5, 8, 10, 11, 13, 14})


@pytest.fixture
def fake(answers: Answers) -> Iterator[FakeOpenAI]:
    with FakeOpenAI(responder=answers, latency_s=0.001) as server:
        yield server


def init_project(tmp_path: Path, fake: FakeOpenAI, **suite: Any) -> Path:
    """``sealedeval init``, then the user's own items, engines and suite; committed."""
    cli(tmp_path, "init", "myeval")
    root = tmp_path / "myeval"
    write_jsonl(root / "data/example/items.jsonl", ITEMS)
    cfg = yaml.safe_load((root / "config/config.yaml").read_text())
    cfg["project"]["seed"] = SEED
    cfg["engines"] = {
        "reference": {"kind": "reference", "concurrency": 4},
        "fake": {
            "kind": "openai_chat",
            "base_url": fake.base_url,
            "model": "fake-model",
            "concurrency": 4,
            "max_retries": 1,
            "timeout_s": 10,
        },
    }
    cfg["suites"] = {
        "example": {
            "kind": "tasks",
            "items": "data/example/items.jsonl",
            "prompt": "What is {input}? Reply with the number only.",
            "graders": [{"name": "exact"}],
            "engines": ["reference", "fake"],
            "analysis": {"delta": 0.1},
        }
        | suite
    }
    (root / "config/config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "my eval")
    return root


def parts(root: Path, store: str) -> list[Path]:
    return sorted((root / store).rglob("part-*.parquet"))


def rows_of(files: list[Path]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for f in files:
        out += pq.read_table(f).to_pylist()
    return out


def one_line_error(proc: Any) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    err = str(proc.stderr).strip()
    assert "\n" not in err and err.startswith("sealedeval: error: "), err
    return err


@pytest.mark.slow
def test_pilot_before_the_seal_leaves_the_study_and_its_audit_untouched(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    root = init_project(tmp_path, fake)
    assert not (root / "rubric.lock").exists()

    out = cli(root, "pilot", "example", "--limit", "5", "--no-progress")
    assert "sealedeval plan example" in out.stdout
    assert fake.count() == 5
    assert not (root / "results/raw").exists()
    pilot = rows_of(parts(root, "results/pilot"))
    assert len(pilot) == 10 and not any(r["sealed"] for r in pilot)
    chosen = pilot_order(SEED, "example", ALL_IDS)[:5]
    for eng in ("reference", "fake"):
        assert sorted(r["item_id"] for r in pilot if r["engine"] == eng) == sorted(chosen)
    entries = [json.loads(x) for x in (root / "ledger.jsonl").read_text().splitlines()]
    assert [(e["kind"], e["engine"]) for e in entries] == [
        ("pilot", "reference"),
        ("pilot", "fake"),
    ]
    assert all(p["path"].startswith("results/pilot/example/") for e in entries for p in e["parts"])

    cli(root, "plan", "example")
    assert (root / "results/pilot/plan.json").exists()

    cli(root, "seal")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "Seal the rubric")
    cli(root, "run", "example", "--no-progress")  # not refused: the pilot is not in results/raw
    assert fake.count() == 5 + N_ITEMS
    cli(root, "pilot", "example", "--limit", "5", "--engine", "fake", "--no-progress")  # after too
    assert fake.count() == 5 + N_ITEMS  # its answers are reused
    cli(root, "publish")

    result = json.loads((root / "results/result.json").read_text())
    manifest = [m["path"] for m in result["manifest"]]
    assert manifest and all(p.startswith("results/raw/") for p in manifest), manifest
    assert result["suites"]["example"]["seal"]["status"] == "pre-registered"

    for deleted in (False, True):  # the pilot store present, then deleted: the same audit
        if deleted:
            shutil.rmtree(root / "results/pilot")
        audit = cli(root, "audit", check=False)
        assert audit.returncode == 0, audit.stdout + audit.stderr
        [attempts] = [ln for ln in audit.stdout.splitlines() if ln.startswith("attempts ")]
        assert "example/fake 1 run;" in attempts and "example/reference 1 run;" in attempts
        assert attempts.endswith("example: 3 pilot runs (unsealed, not counted)"), attempts


def _item_scores(root: Path) -> dict[str, dict[str, list[float]]]:
    """engine → item → replicate scores, straight from the pilot rows (exact grader: the
    answer is the target's text)."""
    target = {str(it["id"]): str(it["target"]) for it in ITEMS}
    out: dict[str, dict[str, list[float]]] = {}
    for r in rows_of(parts(root, "results/pilot")):
        if r["status"] != "ok":
            continue
        ok = float(str(r["output_text"]).strip() == target[r["item_id"]])
        out.setdefault(r["engine"], {}).setdefault(r["item_id"], []).append(ok)
    return out


def _expected(root: Path, a: str, b: str, delta: float) -> tuple[float, int, int]:
    s = _item_scores(root)
    vc = stats.variance_components(s[a], s[b])
    args = (vc.omega2, vc.sigma2_a, vc.sigma2_b, vc.k_a, vc.k_b)
    return (
        stats.mde_paired(*args, N_ITEMS, 0.05, 0.8),
        stats.sample_size_items(*args, delta, 0.05, 0.8),
        vc.n,
    )


@pytest.mark.slow
@pytest.mark.parametrize("repeats", [1, 3])
def test_plan_is_stats_mde_on_the_pilots_paired_scores(
    tmp_path: Path, fake: FakeOpenAI, answers: Answers, repeats: int
) -> None:
    root = init_project(tmp_path, fake, repeats=repeats)
    cli(root, "pilot", "example", "--limit", "20", "--no-progress")
    out = cli(root, "plan", "example").stdout
    plan = json.loads((root / "results/pilot/plan.json").read_text())["suites"]["example"]
    assert (plan["study_items"], plan["pilot_items"]) == (N_ITEMS, 20)
    [c] = plan["comparisons"]
    a, b = c["a"], c["b"]
    assert {a, b} == {"reference", "fake"}
    mde, need, n = _expected(root, a, b, 0.1)
    assert c["pilot_items"] == n == 20
    assert c["mde"] == pytest.approx(mde, rel=1e-9)
    assert c["n_for_delta"] == need
    assert c["delta"] == 0.1 and (c["k_a"], c["k_b"]) == (repeats, repeats)
    assert f"{a} vs {b}" in out and f"{mde:.3f}" in out and str(need) in out
    assert "before `sealedeval seal`: set the items (data/example/items.jsonl)" in out
    assert "delta (suites.example.analysis.delta)" in out

    # other answers, other numbers (the pilot store is disposable: delete and pilot again)
    shutil.rmtree(root / "results/pilot")
    answers.wrong, answers.flaky = {2, 3}, set()
    cli(root, "pilot", "example", "--limit", "20", "--no-progress")
    cli(root, "plan", "example")
    [c2] = json.loads((root / "results/pilot/plan.json").read_text())["suites"]["example"][
        "comparisons"
    ]
    mde2, need2, _ = _expected(root, a, b, 0.1)
    assert c2["mde"] == pytest.approx(mde2, rel=1e-9) and c2["n_for_delta"] == need2
    assert (c2["mde"], c2["n_for_delta"]) != (c["mde"], c["n_for_delta"])


@pytest.mark.slow
def test_setting_delta_after_the_plan_needs_no_new_pilot(tmp_path: Path, fake: FakeOpenAI) -> None:
    """The analysis block is sealed, so setting ``delta`` moves the rubric hash; the pilot's
    answers still plan (graded as the suite is now), with a note, and nothing is asked again."""
    root = init_project(tmp_path, fake)
    cli(root, "pilot", "example", "--limit", "12", "--no-progress")
    calls = fake.count()
    path = root / "config/config.yaml"
    cfg = yaml.safe_load(path.read_text())
    cfg["suites"]["example"]["analysis"]["delta"] = 0.2
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    out = cli(root, "plan", "example").stdout
    assert "note: the pilot ran before the last edit" in out
    plan = json.loads((root / "results/pilot/plan.json").read_text())["suites"]["example"]
    assert plan["pilot_rubric_sha256"] != plan["rubric_sha256"]
    [c] = plan["comparisons"]
    mde, need, n = _expected(root, c["a"], c["b"], 0.2)
    assert (c["delta"], c["n_for_delta"], c["pilot_items"]) == (0.2, need, n)
    assert n == 12
    assert c["mde"] == pytest.approx(mde, rel=1e-9)
    assert fake.count() == calls


@pytest.mark.slow
def test_plan_says_what_it_cannot_size(tmp_path: Path, fake: FakeOpenAI) -> None:
    root = init_project(tmp_path, fake)
    cli(root, "pilot", "example", "--limit", "4", "--engine", "reference", "--no-progress")
    out = cli(root, "plan", "example").stdout
    assert "not piloted: fake (`sealedeval pilot example --engine fake`)" in out
    [c] = json.loads((root / "results/pilot/plan.json").read_text())["suites"]["example"][
        "comparisons"
    ]
    assert (c["mde"], c["n_for_delta"]) == (None, None)


@pytest.mark.slow
def test_bad_inputs_are_one_line_exit_2(tmp_path: Path, fake: FakeOpenAI) -> None:
    root = init_project(tmp_path, fake)
    err = one_line_error(cli(root, "plan", "example", check=False))
    assert err.endswith("no pilot runs for example; run `sealedeval pilot example` first")
    assert "'exampel'" in one_line_error(cli(root, "pilot", "exampel", check=False))
    assert "'exampel'" in one_line_error(cli(root, "plan", "exampel", check=False))
    assert "--limit 0" in one_line_error(cli(root, "pilot", "example", "--limit", "0", check=False))
    assert "'nope'" in one_line_error(
        cli(root, "pilot", "example", "--engine", "nope", check=False)
    )
    assert fake.count() == 0 and not (root / "results/pilot").exists()
    assert not (root / "ledger.jsonl").exists()


def test_pilot_order_is_seeded_and_stable() -> None:
    order = pilot_order(SEED, "example", ALL_IDS)
    assert sorted(order) == sorted(ALL_IDS) and order != ALL_IDS
    assert pilot_order(SEED, "example", list(reversed(ALL_IDS))) == order  # not the file order
    assert pilot_order(SEED + 1, "example", ALL_IDS) != order  # the seed moves it
    # adding items keeps the relative order of the others (a pilot's items stay its items)
    more = pilot_order(SEED, "example", [*ALL_IDS, "z1", "z2"])
    assert [i for i in more if i in set(ALL_IDS)] == order
