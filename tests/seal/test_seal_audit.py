"""``sealedeval audit`` on a real sealed project: the clean pass and one planted failure each.

Every plant must be caught by the check whose job it is (named in the table) and must make the
exit code non-zero; the clean project must pass with only the honest "no external anchor" WARN.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil

import pytest

from sealedeval.canonical import dumps

CONFIGS_MORE_REPEATS = ("config/tiny.yaml", "config/more-repeats.yaml")
CHECK_NAMES = (
    "raw runs readable",
    "lock matches files",
    "lock committed",
    "seal precedes runs",
    "rows bound to seal",
    "manifest checksums",
    "config as built",
    "result re-derives",
    "environment",
    "design as sealed",
    "counts add up",
    "ledger chain",
    "ledgered parts",
    "attempts",
    "external anchors",
)


def _only_failing(audit, *names: str) -> None:
    assert audit.rc == 1, audit
    assert audit.failing() == set(names), audit
    assert "audit: FAILED" in audit.out


def _edit_tasks(sealed) -> None:
    tasks = sealed.root / "data" / "golden" / "tasks.yaml"
    tasks.write_text(
        tasks.read_text(encoding="utf-8") + "\n# tightened after looking at the answers\n",
        encoding="utf-8",
    )


# -- 1. clean ----------------------------------------------------------------------------------
def test_clean_project_passes_with_only_the_anchor_warning(sealed):
    a = sealed.audit()
    assert a.rc == 0, a
    assert tuple(a.checks) == CHECK_NAMES, a
    warned = {"external anchors", "design as sealed"}
    for name, (status, _) in a.checks.items():
        assert status == ("WARN" if name in warned else "PASS"), a
    assert "only git dates exist" in a.detail("external anchors")
    # the template seals all three suites in tiny's design and runs golden only: said, not hidden
    assert a.detail("design as sealed") == "sealed but never run: bloodpanel, grounding"
    assert "audit: passed" in a.out
    # the seal commit named by the rows is the template's own "Seal rubric" commit
    assert {r["seal_commit"] for r in sealed.all_rows()} == {sealed.seal_commit}


# -- 2. plants ---------------------------------------------------------------------------------
def test_a_rubric_input_edited_after_seal(sealed):
    _edit_tasks(sealed)
    a = sealed.audit()
    _only_failing(a, "lock matches files")
    assert "data/golden/tasks.yaml" in a.detail("lock matches files")
    # and no new run can be made under the stale seal (user error, exit 2)
    assert sealed.run() == 2


def test_b_one_raw_value_edited(sealed):
    part = sealed.parts()[0]
    rows = sealed.read_part(part)
    assert rows[0]["status"] == "ok"
    rows[0]["output_text"] = "I do not know."
    sealed.write_part(part, rows)
    a = sealed.audit()
    assert a.rc == 1, a
    assert a.status("manifest checksums") == "FAIL", a
    assert "sha256 differs" in a.detail("manifest checksums")
    assert a.status("result re-derives") == "FAIL", a
    # nothing about the seal itself is wrong
    for name in (
        "lock matches files",
        "lock committed",
        "seal precedes runs",
        "rows bound to seal",
    ):
        assert a.status(name) == "PASS", a


def test_c_raw_part_deleted(sealed):
    gone = sealed.parts()[-1]
    gone.unlink()
    a = sealed.audit()
    assert a.rc == 1, a
    assert a.status("manifest checksums") == "FAIL", a
    assert f"{gone.relative_to(sealed.root).as_posix()} missing" in a.detail("manifest checksums")


def _first_number(node, path=()):
    """Path to the first int/float leaf (sorted keys), for a one-number hand edit."""
    if isinstance(node, dict):
        for k in sorted(node):
            hit = _first_number(node[k], (*path, k))
            if hit is not None:
                return hit
    elif isinstance(node, list):
        for i, v in enumerate(node):
            hit = _first_number(v, (*path, i))
            if hit is not None:
                return hit
    elif isinstance(node, int | float) and not isinstance(node, bool):
        return path
    return None


def test_d_result_json_hand_edited(sealed):
    text = sealed.result_path.read_text(encoding="utf-8")
    doc = json.loads(text)
    assert dumps(doc) == text  # canonical: the edit below changes exactly one number
    path = _first_number(doc["suites"]["golden"]["analysis"])
    assert path is not None
    node = doc["suites"]["golden"]["analysis"]
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = node[path[-1]] + 1
    sealed.result_path.write_text(dumps(doc), encoding="utf-8")
    json.loads(sealed.result_path.read_text(encoding="utf-8"))  # still valid JSON
    a = sealed.audit()
    _only_failing(a, "result re-derives")
    assert "result.json differs" in a.detail("result re-derives")


def test_e_report_md_edited(sealed):
    md = sealed.report_path
    text = md.read_text(encoding="utf-8")
    assert "100.0%" in text  # the reference engine's ceiling, nudged down by hand
    md.write_text(text.replace("100.0%", "99.0%", 1), encoding="utf-8")
    a = sealed.audit()
    _only_failing(a, "result re-derives")
    assert "report.md differs" in a.detail("result re-derives")
    assert "result.json differs" not in a.detail("result re-derives")


@pytest.mark.slow
def test_f_unsealed_rows_mixed_in(sealed):
    (sealed.root / "config" / "more-repeats.yaml").write_text(
        "suites:\n  golden:\n    repeats: 4\n", encoding="utf-8"
    )
    assert sealed.run("--unsealed", configs=CONFIGS_MORE_REPEATS) == 0
    unsealed = [r for r in sealed.all_rows() if not r["sealed"]]
    assert len(unsealed) == 6  # 6 tasks x the one new repeat; the rest resumed as done
    assert {r["seal_commit"] for r in unsealed} == {""}
    sealed.publish(configs=CONFIGS_MORE_REPEATS)

    a = sealed.audit(configs=CONFIGS_MORE_REPEATS)
    _only_failing(a, "rows bound to seal")
    assert "6 unsealed rows" in a.detail("rows bound to seal")

    a = sealed.audit("--allow-unsealed", configs=CONFIGS_MORE_REPEATS)
    assert a.rc == 0, a
    assert "6 unsealed, declared" in a.detail("rows bound to seal")
    result = json.loads(sealed.result_path.read_text(encoding="utf-8"))
    assert result["status"] == "not pre-registered"
    assert result["suites"]["golden"]["seal"]["pre_registered"] is False
    assert "not pre-registered" in sealed.report_path.read_text(encoding="utf-8")


@pytest.mark.slow
def test_g_lock_committed_after_first_run(sealed):
    """The run's first call predates the commit that holds the lock it claims.

    ``run`` refuses an uncommitted lock, so the realistic way to get here is a seal commit whose
    (client-set) date lies after the runs: rebuilt from the inputs commit, the lock is committed
    dated an hour ahead, then the engine runs now.
    """
    sealed.git("reset", "-q", "--hard", sealed.init_commit)
    shutil.rmtree(sealed.root / "results", ignore_errors=True)
    sealed.seal()
    later = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S+0000")
    late_seal = sealed.commit(
        "Seal rubric", "rubric.lock", env={"GIT_COMMITTER_DATE": later, "GIT_AUTHOR_DATE": later}
    )
    assert sealed.run() == 0
    assert {r["seal_commit"] for r in sealed.all_rows()} == {late_seal}
    sealed.publish()
    a = sealed.audit()
    _only_failing(a, "seal precedes runs")
    assert f"precedes seal commit {late_seal[:12]}" in a.detail("seal precedes runs")


def test_h_rows_under_an_older_rubric(sealed):
    _edit_tasks(sealed)
    sealed.seal()
    sealed.commit("Re-seal after editing tasks", "rubric.lock", "data")
    a = sealed.audit()
    assert a.rc == 1, a
    assert a.status("lock matches files") == "PASS", a  # the new lock is honest...
    assert a.status("lock committed") == "PASS", a
    assert a.status("rows bound to seal") == "FAIL", a  # ...but the rows are not under it
    assert "24 golden rows carry another rubric hash" in a.detail("rows bound to seal")
    # the runner will not mix the old rows with new ones either
    assert sealed.run() == 2


def test_i_raw_runs_committed_off_the_seal_line(sealed):
    """Runs committed on a branch forked before the seal, then merged: not after the seal."""
    part = sealed.parts()[0]
    data = part.read_bytes()
    side_name = part.name.replace(".parquet", "-side.parquet")
    rel = part.parent.relative_to(sealed.root) / side_name
    sealed.git("checkout", "-q", "-b", "pre-seal", sealed.init_commit)
    (sealed.root / rel).parent.mkdir(parents=True, exist_ok=True)
    (sealed.root / rel).write_bytes(data)
    side = sealed.commit("Runs from the pre-seal branch", "results")
    sealed.git("checkout", "-q", "main")
    sealed.git("merge", "-q", "--no-edit", "-m", "Merge pre-seal runs", "pre-seal")
    # the published manifest lists the merged part; publish states that no run wrote it
    sealed.publish(not_as_sealed="-side.parquet was written by no ledgered run")
    a = sealed.audit()
    # ... and no run wrote it: the ledger knows only the parts of the sealed run
    _only_failing(a, "seal precedes runs", "ledgered parts")
    assert f"raw runs committed in {side[:12]}" in a.detail("seal precedes runs")
    assert "was written by no ledgered run" in a.detail("ledgered parts")


def test_j_result_json_missing(sealed):
    sealed.result_path.unlink()
    a = sealed.audit()
    assert a.rc == 1, a
    assert a.status("manifest checksums") == "FAIL", a
    assert "results/result.json: missing; run `sealedeval publish`" in a.detail(
        "manifest checksums"
    )
    assert a.status("result re-derives") == "FAIL", a
    assert a.status("counts add up") == "FAIL", a


@pytest.mark.parametrize("how", ["modified", "untracked"])
def test_k_lock_not_committed(sealed, how):
    lock = sealed.root / "rubric.lock"
    if how == "modified":
        # same content, different bytes: the working copy is not what was committed
        lock.write_text(json.dumps(json.loads(lock.read_text()), indent=4) + "\n")
    else:
        sealed.git("rm", "-q", "--cached", "rubric.lock")
        sealed.git("commit", "-q", "-m", "Stop tracking the lock")
    a = sealed.audit()
    _only_failing(a, "lock committed")
    assert "rubric.lock is untracked or modified" in a.detail("lock committed")


@pytest.mark.slow
def test_l_rows_claim_an_earlier_seal_that_sealed_another_rubric(sealed):
    """Rubric v2 is chosen after an unsealed run; the rows are relabelled to the v1 seal commit
    (which predates the runs) and v2 is committed afterwards. Every row carries the current lock
    hash and starts after its claimed seal commit, but that commit never sealed this rubric."""
    for p in sealed.parts():
        p.unlink()
    _edit_tasks(sealed)
    sealed.seal()
    assert sealed.run("--unsealed") == 0
    for p in sealed.parts():
        rows = sealed.read_part(p)
        for r in rows:
            r["sealed"] = True
            r["seal_commit"] = sealed.seal_commit
        sealed.write_part(p, rows)
    sealed.commit("Re-seal (after the runs)", "rubric.lock", "data", "results")
    sealed.publish(not_as_sealed="differs from the ledger")
    a = sealed.audit()
    # the relabelled parts are no longer the bytes their run wrote: the ledger says so too
    _only_failing(a, "seal precedes runs", "ledgered parts")
    assert f"not sealed in {sealed.seal_commit[:12]}" in a.detail("seal precedes runs")
    assert "differs from the ledger (edited or swapped)" in a.detail("ledgered parts")


def test_audit_without_a_project_is_a_user_error(tmp_path):
    from sealedeval.cli import main

    assert main(["audit", "--root", str(tmp_path)]) == 2


def _dvc_lock(raw_md5: str) -> str:
    return (
        "schema: '2.0'\nstages:\n  runs:\n    cmd: snakemake --cores 8 runs\n    outs:\n"
        f"    - path: results/raw\n      hash: md5\n      md5: {raw_md5}\n"
    )


def _commit_on_pre_seal_branch(sealed, branch: str, text: str) -> str:
    sealed.git("checkout", "-q", "-b", branch, sealed.init_commit)
    (sealed.root / "dvc.lock").write_text(text, encoding="utf-8")
    side = sealed.commit(f"dvc.lock on {branch}", "dvc.lock")
    sealed.git("checkout", "-q", "main")
    sealed.git("merge", "-q", "--no-edit", "-m", f"Merge {branch}", branch)
    return side


def test_m_dvc_lock_of_earlier_runs_before_the_seal_is_no_record_of_these(sealed):
    """A dvc.lock committed before a re-seal records the earlier runs (the repository's own
    default run, say): its date says nothing about the runs audited now."""
    _commit_on_pre_seal_branch(sealed, "old-runs", _dvc_lock("0" * 32 + ".dir"))
    a = sealed.audit()
    assert a.status("seal precedes runs") == "PASS", a
    assert a.rc == 0, a


def test_n_dvc_lock_recording_these_runs_before_the_seal(sealed):
    """A dvc.lock that records exactly these raw runs (DVC's md5 of results/raw, recomputed
    here) in a commit that does not descend from the seal: recorded before the seal."""
    from sealedeval.audit import dvc_dir_md5

    side = _commit_on_pre_seal_branch(
        sealed, "pre-seal", _dvc_lock(dvc_dir_md5(sealed.root / "results/raw"))
    )
    a = sealed.audit()
    _only_failing(a, "seal precedes runs")
    assert f"raw runs committed in {side[:12]}" in a.detail("seal precedes runs")
