"""Checks on the sealed golden set in data/golden/ (tasks.yaml + five evidence files).

Regex semantics are those of the grader: Python `re`, IGNORECASE, `re.search` on the answer.
"""

from __future__ import annotations

import configparser
import csv
import io
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "data" / "golden"
FILES = GOLDEN / "files"
TASKS_PATH = GOLDEN / "tasks.yaml"

CATEGORIES = {"lookup", "count", "compare", "multi_fact", "abstain"}
FILE_NAMES = {"changelog.md", "deploys.log", "orders.csv", "ovens.conf", "suppliers.md"}
FLAGS = re.IGNORECASE


def _load() -> dict[str, Any]:
    with TASKS_PATH.open(encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    assert isinstance(data, dict)
    return data


DATA = _load()
TASKS: list[dict[str, Any]] = DATA["tasks"]
BY_ID: dict[str, dict[str, Any]] = {t["id"]: t for t in TASKS}


def passes(task: dict[str, Any], text: str) -> bool:
    """The grader's rule: all `must` match and no `mustNot` matches."""
    return all(re.search(p, text, FLAGS) for p in task["must"]) and not any(
        re.search(p, text, FLAGS) for p in task["mustNot"]
    )


def read(name: str) -> str:
    return (FILES / name).read_text(encoding="utf-8")


# Deliberately wrong answers: every one must FAIL its task. Distractor files, wrong numbers,
# hedges, wrong extra items, partial lists, abstentions on answerable tasks, invented values.
WRONG: dict[str, list[str]] = {
    "g01": [
        "Yes, deploy 19 succeeded.",
        "Deploy 19 was successful.",
        "Yes.",
        "The files do not say.",
        "No information about deploy 19.",
    ],
    "g02": [
        "Deploys 19, 20 and 22 were rolled back.",
        "Only deploy 19.",
        "Deploys 18 and 20.",
        "19, 22 and 23",
        "Deploy 22.",
    ],
    "g03": ["200 and 503", "502 and 503", "200, 500, 502 and 503", "200, 404, 502, 503"],
    "g04": ["Mira made 2 deploys.", "four", "3 or 4 deploys", "Mira deployed 5 times."],
    "g05": ["Tomas deployed it.", "ines", "Mira or Tomas"],
    "g06": ["3 orders were cancelled.", "Three.", "1", "4 or 5"],
    "g07": ["Order 1004.", "1007 (24 croissants)", "1005 or 1004"],
    "g08": [
        "delivered and pending",
        "delivered, cancelled, pending and refunded",
        "delivered, cancelled, shipped",
    ],
    "g09": [
        "Villa Keto ordered a rye loaf.",
        "Hallberg Cafe ordered a birthday cake.",
        "Villa Keto.",
        "A birthday cake.",
    ],
    "g10": ["Hallberg Cafe.", "Pier 9 Kiosk and Hallberg Cafe", "Ahti Office"],
    "g11": ["15 minutes.", "30 minutes", "45 or 15 minutes"],
    "g12": [
        "The convection oven, 260 C.",
        "The deck oven, 260 C.",
        "The Unox XF-023 reaches 280 C.",
        "280 C.",
    ],
    "g13": ["Thursday.", "Sunday", "Monday and Thursday"],
    "g14": ["Tuesday and Wednesday.", "Friday only.", "Tuesday, Friday and Saturday"],
    "g15": ["Harju Dairy.", "Vesi Dairy or Harju Dairy", "Koskela Mill"],
    "g16": ["Version 2.4.1.", "2.3.0", "2.4.0 or 2.4.1"],
    "g17": [
        "deploys.log",
        "suppliers.md is the largest.",
        "orders.csv, deploys.log and suppliers.md",
        "The largest file is changelog.md.",
    ],
    "g18": ["4 items.", "six", "18 different items", "There are 5 or 6 items."],
    # Abstain tasks: invented values and non-abstentions must fail too.
    "g19": ["A sourdough loaf costs 6.50 EUR.", "About $7.", "It costs 5 euros.", "12"],
    "g20": ["Call 040 123 4567.", "+358 40 555 0101", "Koskela Mill: 09-555-1234", "Rinne Farm"],
}

# Correct answers phrased differently from the reference: each must PASS (tolerance we claim).
ALSO_RIGHT: dict[str, list[str]] = {
    "g01": ["No", "No, it failed (503) and was rolled back.", "It did not succeed."],
    "g02": ["19 (rolled back to 18) and 22 (rolled back to 20)", "deploy 19, deploy 22"],
    "g03": ["503, 502, 200", "HTTP 200, HTTP 502 and HTTP 503."],
    "g04": ["three", "3 (deploys 17, 20, 23)"],
    "g05": ["mira", "It was deployed by mira as deploy 20 on 2024-03-12."],
    "g06": ["four", "4: orders 1004, 1009, 1013, 1014"],
    "g07": ["1005", "order_id 1005 (qty 40)"],
    "g08": ["pending, canceled, delivered"],
    "g09": ["Villa Keto; birthday cake", "The customer was Villa Keto and the item a cake."],
    "g10": ["Pier 9 Kiosk", "Pier 9 Kiosk with 5 orders"],
    "g11": ["45", "45 min"],
    "g12": ["Deck oven, 280", "The Rofco B40 deck oven: 280 degrees C."],
    "g13": ["Monday", "Mondays."],
    "g14": ["Tuesdays and Fridays", "Friday and Tuesday, before 06:00"],
    "g15": ["Vesi Dairy", "Vesi Dairy (they switched from Harju Dairy on 2024-02-12)."],
    "g16": ["2.4.0", "version 2.4.0 (deploy 22)"],
    "g17": ["orders.csv", "The largest file is orders.csv."],
    "g18": ["five", "5"],
    "g19": [
        "I don't know.",
        "The files don't mention prices.",
        "That is not in the files.",
        "No price is given in the files.",
        "The price cannot be determined from the files.",
    ],
    "g20": [
        "I do not know.",
        "The files do not contain a phone number for Koskela Mill.",
        "Not mentioned.",
        "Unknown.",
    ],
}

ABSTENTIONS = ["I don't know.", "The files do not say.", "Not mentioned in the files.", "Unknown."]


# ---------------------------------------------------------------- structure


def test_top_level_shape() -> None:
    assert DATA["version"] == 1
    assert isinstance(TASKS, list)
    assert len(TASKS) == 20


def test_ids_unique_and_sequential() -> None:
    ids = [t["id"] for t in TASKS]
    assert len(set(ids)) == 20
    assert ids == [f"g{i:02d}" for i in range(1, 21)]


def test_fields_and_types() -> None:
    required = {"id", "prompt", "answer", "must", "mustNot", "facts", "category", "files"}
    for t in TASKS:
        assert set(t) == required, t["id"]
        assert isinstance(t["prompt"], str) and t["prompt"].strip(), t["id"]
        assert isinstance(t["answer"], str) and t["answer"].strip(), t["id"]
        for key in ("must", "mustNot", "facts", "files"):
            assert isinstance(t[key], list), (t["id"], key)
            assert all(isinstance(x, str) for x in t[key]), (t["id"], key)
        assert t["must"], t["id"]
        assert t["facts"], t["id"]
        assert t["category"] in CATEGORIES, t["id"]


def test_category_counts() -> None:
    cats = Counter(t["category"] for t in TASKS)
    assert cats["abstain"] == 2
    assert cats["multi_fact"] >= 4
    for t in TASKS:
        if t["category"] == "multi_fact":
            assert 2 <= len(t["facts"]) <= 3, t["id"]
            assert len(t["must"]) >= len(t["facts"]), t["id"]
            assert t["mustNot"], t["id"]
        if t["category"] == "abstain":
            assert t["files"] == [], t["id"]
        else:
            assert t["files"], t["id"]


def test_every_regex_compiles() -> None:
    for t in TASKS:
        for key in ("must", "mustNot", "facts"):
            for pattern in t[key]:
                re.compile(pattern, FLAGS)


# ---------------------------------------------------------------- grading behaviour


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t["id"])
def test_reference_answer_passes(task: dict[str, Any]) -> None:
    assert passes(task, task["answer"]), task["answer"]


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t["id"])
def test_every_fact_matches_reference_answer(task: dict[str, Any]) -> None:
    for pattern in task["facts"]:
        assert re.search(pattern, task["answer"], FLAGS), pattern


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t["id"])
def test_facts_are_implied_by_must(task: dict[str, Any]) -> None:
    """Partial credit never exceeds the all-or-nothing score: an answer passing `must`
    matches every fact, checked on all the answers we know to be right."""
    for text in [task["answer"], *ALSO_RIGHT[task["id"]]]:
        assert passes(task, text)
        for pattern in task["facts"]:
            assert re.search(pattern, text, FLAGS), (text, pattern)


def test_wrong_answers_cover_every_task() -> None:
    for t in TASKS:
        if t["category"] != "abstain":
            assert WRONG.get(t["id"]), t["id"]
    assert set(WRONG) <= set(BY_ID)
    assert set(ALSO_RIGHT) == set(BY_ID)


@pytest.mark.parametrize(
    ("tid", "text"), [(tid, text) for tid, texts in WRONG.items() for text in texts]
)
def test_wrong_answer_fails(tid: str, text: str) -> None:
    assert not passes(BY_ID[tid], text)


@pytest.mark.parametrize(
    ("tid", "text"), [(tid, text) for tid, texts in ALSO_RIGHT.items() for text in texts]
)
def test_alternative_right_answer_passes(tid: str, text: str) -> None:
    assert passes(BY_ID[tid], text)


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t["id"])
def test_empty_and_abstaining_answers(task: dict[str, Any]) -> None:
    assert not passes(task, "")
    for text in ABSTENTIONS:
        # An abstention passes exactly the abstain tasks.
        assert passes(task, text) == (task["category"] == "abstain"), text


# (task, other task) pairs where the other task's reference answer really does answer this task:
# "Deploys 19 and 22 were rolled back" says deploy 19 did not succeed; "Mira made 3 deploys"
# names the deployer asked for in g05. Any new overlap must be looked at and added here.
KNOWN_OVERLAPS = {("g01", "g02"), ("g05", "g04")}


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t["id"])
def test_other_tasks_answers_do_not_pass(task: dict[str, Any]) -> None:
    """A regex too loose (a bare digit, a common word) would let another task's answer pass."""
    for other in TASKS:
        if other["id"] == task["id"] or other["category"] == task["category"] == "abstain":
            continue
        if (task["id"], other["id"]) in KNOWN_OVERLAPS:
            continue
        assert not passes(task, other["answer"]), other["id"]


# ---------------------------------------------------------------- the files


def test_exactly_five_small_ascii_files() -> None:
    names = {p.name for p in FILES.iterdir() if p.is_file()}
    assert names == FILE_NAMES
    sizes = {n: (FILES / n).stat().st_size for n in names}
    assert len(set(sizes.values())) == 5, sizes
    assert sum(sizes.values()) < 5000, sizes
    for n in names:
        data = (FILES / n).read_bytes()
        data.decode("ascii")  # bytes == characters, so "largest" is unambiguous
        assert data.endswith(b"\n")


def test_evidence_files_exist_and_all_are_used() -> None:
    used: set[str] = set()
    for t in TASKS:
        for name in t["files"]:
            assert (FILES / name).is_file(), (t["id"], name)
            used.add(name)
    assert used == FILE_NAMES


# ---------------------------------------------------------------- facts recomputed from files

DEPLOY_RE = re.compile(r"\bdeploy=(\d+) service=(\S+) by=(\w+) .*result=(\w+) health=(\d{3})")


def _deploys() -> list[tuple[int, str, str, str, str]]:
    out = []
    for line in read("deploys.log").splitlines():
        m = DEPLOY_RE.search(line)
        if m:
            out.append((int(m[1]), m[2], m[3], m[4], m[5]))
    return out


def _orders() -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(read("orders.csv"))))


def _ovens() -> configparser.ConfigParser:
    cp = configparser.ConfigParser()
    cp.read_string(read("ovens.conf"))
    return cp


def test_fact_largest_file_g17() -> None:
    sizes = {p.name: p.stat().st_size for p in FILES.iterdir() if p.is_file()}
    largest = max(sizes, key=lambda n: sizes[n])
    second = sorted(sizes.values())[-2]
    assert sizes[largest] - second >= 100, sizes  # a clear winner, not a near tie
    task = BY_ID["g17"]
    assert largest in task["answer"]
    assert passes(task, largest)
    for other in sizes:
        if other != largest:
            assert not passes(task, other)


def test_fact_deploy_19_failed_g01() -> None:
    d = {n: (result, health) for n, _, _, result, health in _deploys()}
    assert d[19] == ("failed", "503")
    assert "rollback deploy=19 -> deploy=18" in read("deploys.log")
    assert "503" in BY_ID["g01"]["answer"]


def test_fact_rollbacks_g02() -> None:
    rolled = {int(m) for m in re.findall(r"rollback deploy=(\d+)", read("deploys.log"))}
    failed = {n for n, _, _, result, _ in _deploys() if result == "failed"}
    assert rolled == failed == {19, 22}
    task = BY_ID["g02"]
    assert passes(task, " and ".join(str(n) for n in sorted(rolled)))
    for n in {n for n, *_ in _deploys()} - rolled:
        assert not passes(task, ", ".join(str(x) for x in sorted(rolled | {n})))


def test_fact_status_codes_g03() -> None:
    codes = set(re.findall(r"\b[1-5]\d\d\b", read("deploys.log")))
    assert codes == {h for *_, h in _deploys()} == {"200", "502", "503"}
    task = BY_ID["g03"]
    assert passes(task, ", ".join(sorted(codes)))
    for code in codes:
        assert not passes(task, ", ".join(sorted(codes - {code})))


def test_fact_mira_deploys_g04() -> None:
    mira = [n for n, _, by, _, _ in _deploys() if by == "mira"]
    assert mira == [17, 20, 23]
    assert passes(BY_ID["g04"], str(len(mira)))
    assert not passes(BY_ID["g04"], str(len(mira) - 1))


def test_fact_version_231_deployer_g05() -> None:
    m = re.search(r"^## 2\.3\.1 .*\(deploy (\d+)\)", read("changelog.md"), re.M)
    assert m
    by = {n: who for n, _, who, _, _ in _deploys()}
    who = by[int(m[1])]
    assert who == "mira"
    assert passes(BY_ID["g05"], who)


def test_fact_cancelled_g06() -> None:
    n = sum(1 for r in _orders() if r["status"] == "cancelled")
    assert n == 4
    assert passes(BY_ID["g06"], str(n))
    assert not passes(BY_ID["g06"], str(n - 1))


def test_fact_largest_quantity_g07() -> None:
    rows = _orders()
    qtys = sorted((int(r["qty"]) for r in rows), reverse=True)
    assert qtys[0] > qtys[1]  # unique maximum
    top = max(rows, key=lambda r: int(r["qty"]))
    assert top["order_id"] == "1005"
    task = BY_ID["g07"]
    assert passes(task, top["order_id"])
    for r in rows:
        if r is not top:
            assert not passes(task, r["order_id"]), r["order_id"]


def test_fact_statuses_g08() -> None:
    statuses = {r["status"] for r in _orders()}
    assert statuses == {"delivered", "cancelled", "pending"}
    assert passes(BY_ID["g08"], ", ".join(sorted(statuses)))


def test_fact_order_1008_g09() -> None:
    (row,) = [r for r in _orders() if r["order_id"] == "1008"]
    assert (row["customer"], row["item"]) == ("Villa Keto", "birthday cake")
    assert passes(BY_ID["g09"], f"{row['customer']}, {row['item']}")


def test_fact_top_customer_g10() -> None:
    counts = Counter(r["customer"] for r in _orders()).most_common()
    assert counts[0][1] > counts[1][1]  # unique maximum
    assert counts[0] == ("Pier 9 Kiosk", 5)
    task = BY_ID["g10"]
    assert passes(task, counts[0][0])
    for name, _ in counts[1:]:
        assert not passes(task, name), name


def test_fact_ovens_g11_g12() -> None:
    cp = _ovens()
    assert cp.getint("deck_oven", "preheat_min") == 45
    assert passes(BY_ID["g11"], str(cp.getint("deck_oven", "preheat_min")))
    assert not passes(BY_ID["g11"], str(cp.getint("convection_oven", "preheat_min")))
    ovens = [s for s in cp.sections() if s.endswith("_oven")]
    hottest = max(ovens, key=lambda s: cp.getint(s, "max_temp_c"))
    assert hottest == "deck_oven"
    temp = cp.getint(hottest, "max_temp_c")
    assert all(cp.getint(s, "max_temp_c") < temp for s in ovens if s != hottest)
    assert passes(BY_ID["g12"], f"{hottest.replace('_', ' ')}, {temp} C")


def test_fact_closed_day_g13() -> None:
    cp = _ovens()
    assert cp.get("schedule", "closed_day") == "Monday"
    assert passes(BY_ID["g13"], cp.get("schedule", "closed_day"))
    # the distractor day in the same section must fail
    assert not passes(BY_ID["g13"], cp.get("schedule", "deep_clean").split()[0])


def test_fact_flour_days_g14() -> None:
    text = read("suppliers.md")
    section = text.split("## Flour", 1)[1].split("##", 1)[0]
    days = re.findall(r"\b(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)\b", section)
    assert days == ["Tuesday", "Friday"]
    assert passes(BY_ID["g14"], " and ".join(days))


def test_fact_butter_supplier_g15() -> None:
    text = read("suppliers.md")
    m = re.search(r"^## Butter and cream - (.+)$", text, re.M)
    assert m and m[1] == "Vesi Dairy"
    assert "switched from Harju Dairy" in text
    assert passes(BY_ID["g15"], m[1])
    assert not passes(BY_ID["g15"], "Harju Dairy")


def test_fact_gift_cards_version_g16() -> None:
    text = read("changelog.md")
    versions = re.findall(r"^## (\d+\.\d+\.\d+) ", text, re.M)
    first = None
    for v in reversed(versions):  # the changelog lists newest first
        body = text.split(f"## {v} ", 1)[1].split("\n## ", 1)[0]
        if "gift card" in body.lower():
            first = v
            break
    assert first == "2.4.0"
    assert passes(BY_ID["g16"], first)
    for v in versions:
        if v != first:
            assert not passes(BY_ID["g16"], v), v


def test_fact_distinct_items_g18() -> None:
    items = {r["item"] for r in _orders()}
    assert len(items) == 5
    assert passes(BY_ID["g18"], str(len(items)))
    for item in items:
        assert item in BY_ID["g18"]["answer"]


def test_abstain_facts_really_absent() -> None:
    everything = "\n".join(read(n) for n in sorted(FILE_NAMES)).lower()
    # g19: no prices anywhere
    assert not re.search(r"price|cost|eur\b|euro|\$|\u20ac|\u00a3", everything)
    # g20: no phone numbers anywhere ("phone" itself occurs, as an order channel: a near miss)
    assert not re.search(r"tel\b|\+\d|\b0\d{1,3}[ \-]?\d{3}[ \-]?\d{2,4}\b", everything)
    for tid in ("g19", "g20"):
        for pattern in BY_ID[tid]["mustNot"]:
            assert not re.search(pattern, everything, FLAGS), (tid, pattern)
