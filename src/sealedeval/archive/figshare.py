"""Figshare deposits over its REST API (httpx; there is no maintained client library).

Protocol (docs.figshare.com): create an article, then per file initiate an upload (name, size,
md5), read its part layout from the upload service, PUT each part, complete; reserve a DOI;
publish (each publish of the same article is a new version). The token travels only in the
Authorization header.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from sealedeval.errors import UserError

ENV_TOKEN = "FIGSHARE_TOKEN"
ENV_URL = "SEALEDEVAL_FIGSHARE_URL"
DEFAULT_URL = "https://api.figshare.com/v2"


class Figshare:
    def __init__(self, base_url: str | None = None) -> None:
        tok = os.environ.get(ENV_TOKEN, "").strip()
        if not tok:
            raise UserError(f"${ENV_TOKEN} is not set; create a personal token on figshare")
        self.base = (base_url or os.environ.get(ENV_URL) or DEFAULT_URL).rstrip("/")
        self.http = httpx.Client(headers={"Authorization": f"token {tok}"}, timeout=120)

    def call(self, method: str, url: str, **kw: Any) -> Any:
        full = url if url.startswith("http") else self.base + url
        try:
            r = self.http.request(method, full, **kw)
        except httpx.HTTPError as e:
            raise UserError(f"figshare: {method} {full}: {type(e).__name__}") from None
        if r.status_code >= 400:
            raise UserError(f"figshare: {method} {full}: HTTP {r.status_code} {r.text[:200]}")
        return r.json() if r.content and "json" in r.headers.get("content-type", "") else None

    def upload(self, article: int, path: Path) -> None:
        data = path.read_bytes()
        loc = self.call(
            "POST",
            f"/account/articles/{article}/files",
            json={"name": path.name, "size": len(data), "md5": hashlib.md5(data).hexdigest()},
        )["location"]
        info = self.call("GET", loc)
        parts = self.call("GET", info["upload_url"])["parts"]
        for p in parts:
            chunk = data[p["startOffset"] : p["endOffset"] + 1]
            self.call("PUT", f"{info['upload_url']}/{p['partNo']}", content=chunk)
        self.call("POST", f"/account/articles/{article}/files/{info['id']}")


def deposit(
    paths: Sequence[Path],
    metadata: dict[str, Any],
    *,
    publish: bool = False,
    previous: dict[str, Any] | None = None,
    base_url: str | None = None,
) -> dict[str, Any]:
    fs = Figshare(base_url)
    body = {
        "title": metadata["title"],
        "description": metadata["description"],
        "keywords": metadata.get("keywords") or ["evaluation"],
        "defined_type": "dataset",
        "authors": [{"name": c["name"]} for c in metadata["creators"]],
    }
    if previous and previous.get("id"):
        article = int(previous["id"])
        fs.call("PUT", f"/account/articles/{article}", json=body)
        for f in fs.call("GET", f"/account/articles/{article}/files") or []:
            fs.call("DELETE", f"/account/articles/{article}/files/{f['id']}")
    else:
        article = int(fs.call("POST", "/account/articles", json=body)["entity_id"])
    for p in paths:
        fs.upload(article, p)
    art = fs.call("GET", f"/account/articles/{article}")
    doi = art.get("doi") or fs.call("POST", f"/account/articles/{article}/reserve_doi")["doi"]
    if publish:
        fs.call("POST", f"/account/articles/{article}/publish")
        art = fs.call("GET", f"/account/articles/{article}")
    return {
        "service": "figshare",
        "id": article,
        "doi": doi,
        "published": publish,
        "version": art.get("version", 0),
        "url": art.get("figshare_url", ""),
        "files": sorted(p.name for p in paths),
    }
