"""Zenodo deposits through zenodo-client.

zenodo-client hard-codes zenodo.org / sandbox.zenodo.org, but keeps the URLs as instance
attributes, so ``base_url`` (or ``SEALEDEVAL_ZENODO_URL``) re-points them: the tests use a loopback
fake that follows the REST protocol. zenodo-client passes the token as a query parameter, so its
HTTP errors name a URL containing the token; every error is re-raised with the token redacted.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sealedeval.errors import UserError

ENV_TOKEN = "ZENODO_API_TOKEN"
ENV_SANDBOX_TOKEN = "ZENODO_SANDBOX_API_TOKEN"
ENV_URL = "SEALEDEVAL_ZENODO_URL"


def token(sandbox: bool) -> str:
    name = ENV_SANDBOX_TOKEN if sandbox else ENV_TOKEN
    value = os.environ.get(name, "").strip()
    if not value:
        raise UserError(f"${name} is not set; create a token with deposit:write scope")
    return value


def _client(sandbox: bool, base_url: str | None) -> tuple[Any, str]:
    from zenodo_client import Zenodo

    tok = token(sandbox)
    z = Zenodo(access_token=tok, sandbox=sandbox)
    base = (base_url or os.environ.get(ENV_URL, "")).rstrip("/")
    if base:
        z.base = base
        z.api_base = base + "/api"
        z.depositions_base = z.api_base + "/deposit/depositions"
    return z, tok


def _redacted(e: Exception, tok: str) -> UserError:
    return UserError(f"zenodo: {str(e).replace(tok, '***')}")


def summarise(dep: dict[str, Any], *, sandbox: bool) -> dict[str, Any]:
    """What deposit.json keeps of a deposition (ids, DOIs, state; no token, no bucket URL)."""
    meta = dep.get("metadata", {})
    doi = dep.get("doi") or meta.get("prereserve_doi", {}).get("doi", "")
    return {
        "service": "zenodo",
        "sandbox": sandbox,
        "id": dep["id"],
        "conceptrecid": str(dep.get("conceptrecid", "")),
        "doi": doi,
        "conceptdoi": dep.get("conceptdoi", ""),
        "published": bool(dep.get("submitted")) and dep.get("state") == "done",
        "created": dep.get("created", ""),
        "url": dep.get("links", {}).get("html", ""),
        "files": sorted(f.get("filename", "") for f in dep.get("files", [])),
    }


def deposit(
    paths: Sequence[Path],
    metadata: dict[str, Any],
    *,
    publish: bool = False,
    sandbox: bool = False,
    previous: dict[str, Any] | None = None,
    base_url: str | None = None,
) -> dict[str, Any]:
    """Create a deposition (or a new version of ``previous``) with ``paths``; draft unless publish.

    A new version stays under the same concept DOI: zenodo-client's ``update`` calls
    ``actions/newversion`` on a published deposition (or reuses an unpublished draft).
    """
    import requests

    z, tok = _client(sandbox, base_url)
    str_paths = [str(p) for p in paths]
    try:
        if previous and previous.get("sandbox") == sandbox and previous.get("id"):
            res = z.update(str(previous["id"]), paths=str_paths, publish=publish)
            dep = res.json()
            draft = dep.get("links", {}).get("latest_draft")
            if not publish and draft:
                new_id = draft.rstrip("/").split("/")[-1]
                put = requests.put(
                    f"{z.depositions_base}/{new_id}",
                    json={"metadata": metadata},
                    params={"access_token": tok},
                    timeout=30,
                )
                put.raise_for_status()
                dep = put.json()
        else:
            res = z.create({"metadata": metadata}, paths=str_paths, publish=publish)
            dep = res.json()
    except (requests.RequestException, ValueError, KeyError) as e:
        raise _redacted(e, tok) from None
    return summarise(dep, sandbox=sandbox)
