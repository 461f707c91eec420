"""The ``golden`` suite: our own hand-written tasks over five files, graded by regex.

Design per engine: one greedy answer per task (temperature 0) and ``repeats`` sampled answers at
``temperature`` with fixed per-task seeds, so the whole set reproduces on one machine.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from sealedeval.config import Config, EngineConfig
from sealedeval.engines.base import Request
from sealedeval.suites.base import derive_seed, request_key, suites
from sealedeval.suites.golden import plan, prompts, rubric
from sealedeval.suites.golden.items import load_files, load_tasks


class GoldenSuite:
    name = "golden"

    def rubric_inputs(self) -> list[str]:
        return [
            "data/golden/tasks.yaml",
            "data/golden/files/*",
            "pkg:sealedeval/graders/*.py",
            "pkg:sealedeval/suites/base.py",
            "pkg:sealedeval/suites/golden/__init__.py",
            "pkg:sealedeval/suites/golden/items.py",
            "pkg:sealedeval/suites/golden/prompts.py",
            "pkg:sealedeval/suites/golden/rubric.py",
            "pkg:sealedeval/suites/golden/plan.py",
        ]

    def generate(self, cfg: Config, seed: int) -> list[dict[str, Any]]:
        scfg = cfg.suite(self.name)
        tasks = load_tasks(cfg.root, scfg.get("limit"))
        files = load_files(cfg.root)
        out = []
        for t in tasks:
            prompts.leak_check(t, prompts.messages(t, files))
            out.append(t | {"seed": derive_seed(seed, t["id"])})
        return out

    def requests(
        self,
        cfg: Config,
        items: Sequence[Mapping[str, Any]],
        engine: EngineConfig,
        model: str,
        seed: int,
    ) -> list[Request]:
        scfg = cfg.suite(self.name)
        files = load_files(cfg.root)
        design: list[tuple[str, int, float]] = [("greedy", 0, 0.0)]
        design += [("sample", r, float(scfg["temperature"])) for r in range(scfg["repeats"])]
        out = []
        for item in items:
            msgs = prompts.messages(item, files)
            for condition, rep, temp in design:
                s = derive_seed(item["seed"], condition, rep) % (2**31)
                # One short sentence is asked for; stopping at the first newline keeps a small
                # model's rambling out of the graded answer (and out of the time budget).
                params = {
                    "temperature": temp,
                    "max_tokens": int(scfg["max_tokens"]),
                    "seed": s,
                    "stop": ["\n"],
                }
                key = request_key(
                    self.name, item["id"], condition, rep, engine.name, model, params, msgs
                )
                out.append(
                    Request(
                        key,
                        self.name,
                        item["id"],
                        condition,
                        rep,
                        s,
                        tuple(msgs),
                        params,
                        item=dict(item),
                    )
                )
        return out

    def reference_answer(self, request: Request) -> str:
        return str(request.item["answer"])

    def grade(
        self, cfg: Config, items: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]
    ) -> list[dict[str, Any]]:
        return rubric.grade_rows({i["id"]: i for i in items}, rows)

    def analyze(
        self,
        cfg: Config,
        items: Sequence[Mapping[str, Any]],
        graded: Sequence[Mapping[str, Any]],
        rows: Sequence[Mapping[str, Any]],
    ) -> dict[str, Any]:
        scfg = cfg.suite(self.name)
        tasks = {i["id"]: i for i in items}
        engines: dict[str, Any] = {}
        correct: dict[str, dict[str, bool]] = defaultdict(dict)
        for eng in sorted({r["engine"] for r in rows}):
            erows = [r for r in rows if r["engine"] == eng]
            keys = {r["request_key"] for r in erows}
            egraded = [g for g in graded if g["request_key"] in keys]
            greedy = [r for r in erows if r["condition"] == "greedy"]
            sample = [r for r in erows if r["condition"] == "sample"]
            cat_of = {g["request_key"]: g["category"] for g in egraded}
            for r in greedy:
                if cat_of.get(r["request_key"], "error") != "error":
                    correct[eng][r["item_id"]] = cat_of[r["request_key"]] == "correct"
            n_err = sum(1 for r in erows if r["status"] != "ok")
            kinds: dict[str, int] = defaultdict(int)
            for r in erows:
                if r["status"] != "ok":
                    kinds[r["error_kind"]] += 1
            n_runs = max((int(r["repeat"]) + 1 for r in sample), default=0)
            engines[eng] = {
                "model": erows[0]["model"],
                "n_total": len(erows),
                "n_ok": len(erows) - n_err,
                "n_error": n_err,
                "errors_by_kind": dict(sorted(kinds.items())),
                "complete": n_err == 0,
                "greedy": plan.greedy_table(tasks, greedy, egraded),
                "repeats": plan.repeats_table(sample, egraded, n_runs),
                "items": {
                    i: {"greedy": cat_of.get(r["request_key"], "error"), "answer": r["output_text"]}
                    for r in sorted(greedy, key=lambda r: r["item_id"])
                    for i in [r["item_id"]]
                },
            }
        names = sorted(engines)
        pair = scfg.get("compare") or names[:2]
        comparisons = []
        if len(pair) == 2 and all(p in engines for p in pair):
            comparisons.append(plan.compare(pair[0], pair[1], correct))
        return {
            "suite": self.name,
            "n_items": len(items),
            "design": {
                "greedy": 1,
                "repeats": scfg["repeats"],
                "temperature": scfg["temperature"],
                "max_tokens": scfg["max_tokens"],
            },
            "engines": engines,
            "comparisons": comparisons,
            "methods": plan.INTERVALS,
        }


suites.register("golden")(GoldenSuite())
