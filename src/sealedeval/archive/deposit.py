"""``sealedeval deposit``: bundle → Zenodo and/or Figshare; the record goes to results/deposit.json.

The DOI is written to results/deposit.json and CITATION.cff, never into result.json.
"""

from __future__ import annotations

from typing import Any

from sealedeval.archive import bundle, citation, figshare, zenodo
from sealedeval.canonical import dumps
from sealedeval.config import Config
from sealedeval.fsutil import sha256_file, write_text_atomic
from sealedeval.seal import timestamp
from sealedeval.seal.lock import LOCK_NAME, PREREG_NAME


def metadata(cfg: Config, *, prereg: bool = False, embargo: str | None = None) -> dict[str, Any]:
    """Zenodo deposition metadata from config (``project`` and the optional ``publication``)."""
    project, pub = cfg.data["project"], cfg.data.get("publication", {})
    title = project.get("title") or project["name"]
    desc = pub.get("description") or f"Results, raw runs and sealed rubric of {title}."
    if prereg:
        title = f"Pre-registration: {title}"
        desc = (
            "The sealed rubric (rubric.lock: sha256 of every rubric input) deposited "
            "before the first engine call."
        )
    creators = [
        {k: v for k, v in a.items() if k in ("name", "affiliation", "orcid")}
        for a in project.get("authors", [])
    ] or [{"name": "unknown"}]
    meta: dict[str, Any] = {
        "title": title,
        "upload_type": "dataset",
        "description": desc,
        "creators": creators,
        "access_right": "embargoed" if embargo else "open",
        "license": pub.get("license", "cc-by-4.0"),
        "keywords": list(pub.get("keywords", [])),
        # zenodo-client derives a new version's label from this (it bumps a date label).
        "version": str(pub.get("version", "1")),
    }
    if embargo:
        meta["embargo_date"] = embargo
    return meta


def run_deposit(
    cfg: Config,
    *,
    to_zenodo: bool,
    to_figshare: bool,
    publish: bool,
    sandbox: bool,
    zenodo_url: str | None = None,
    figshare_url: str | None = None,
) -> dict[str, Any]:
    root = cfg.root
    record = citation.deposit_record(root)
    write_text_atomic(root / citation.CITATION, citation.render(cfg, record))
    info = bundle.build_bundle(root)
    files = info.files
    meta = metadata(cfg)
    if to_zenodo:
        record["zenodo"] = zenodo.deposit(
            files,
            meta,
            publish=publish,
            sandbox=sandbox,
            previous=record.get("zenodo"),
            base_url=zenodo_url,
        )
    if to_figshare:
        record["figshare"] = figshare.deposit(
            files, meta, publish=publish, previous=record.get("figshare"), base_url=figshare_url
        )
    record["bundle_sha256sums"] = sha256_file(root / bundle.BUNDLE_DIR / bundle.SUMS)
    record["bundle"] = info.summary()
    write_text_atomic(root / citation.DEPOSIT, dumps(record))
    write_text_atomic(root / citation.CITATION, citation.render(cfg, record))
    return record


def preregister(
    cfg: Config,
    *,
    publish: bool,
    sandbox: bool,
    embargo: str | None,
    zenodo_url: str | None = None,
) -> dict[str, Any]:
    """Deposit rubric.lock (and its RFC 3161 token, if any) as a pre-registration record."""

    root = cfg.root
    files = [root / LOCK_NAME] + [
        root / n for n in (timestamp.TSR_NAME, timestamp.CHAIN_NAME) if (root / n).exists()
    ]
    rec = zenodo.deposit(
        files,
        metadata(cfg, prereg=True, embargo=embargo),
        publish=publish,
        sandbox=sandbox,
        base_url=zenodo_url,
    )
    rec["rubric_lock_sha256"] = sha256_file(root / LOCK_NAME)
    write_text_atomic(root / PREREG_NAME, dumps(rec))
    return rec
