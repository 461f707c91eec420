"""Loopback fakes of the Zenodo and Figshare deposit REST APIs (the subset sealedeval uses).

Zenodo: POST /api/deposit/depositions, GET/PUT /api/deposit/depositions/{id}, bucket PUT
/api/files/{bucket}/{name}, POST .../actions/publish and .../actions/newversion (a new draft in
the same concept, named by links.latest_draft). Figshare: /v2/account/articles, file initiate →
upload service parts → PUT part → complete, reserve_doi, publish. Every request must carry the
token; ``seen`` records request lines so a test can check where the token travelled.

The public read side, as ``sealedeval verify`` uses it, needs no token: Zenodo's
``GET /api/records/{id}`` (published records only; ``created`` is the publication time) and
``.../files/{key}/content``; Figshare's ``GET /v2/articles/{id}[/versions/{v}]`` (files with
``download_url``, ``published_date``) and ``/ndownloader/files/{id}``; doi.org's
``GET /api/handles/{doi}`` for the DOIs in ``State.handles``. ``State.clock`` tells the fake
what time it is when a record is published.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import http.server
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class State:
    token: str
    base: str = ""
    deps: dict[int, dict[str, Any]] = field(default_factory=dict)
    buckets: dict[str, dict[str, bytes]] = field(default_factory=dict)
    articles: dict[int, dict[str, Any]] = field(default_factory=dict)
    uploads: dict[str, dict[str, Any]] = field(default_factory=dict)
    seen: list[str] = field(default_factory=list)
    next_id: int = 100
    clock: str | None = None  # the publication time to record (ISO 8601); None: now
    handles: dict[str, str] = field(default_factory=dict)  # DOI → URL, as doi.org resolves

    def now(self) -> str:
        return self.clock or dt.datetime.now(dt.UTC).isoformat()


def _dep_view(st: State, d: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in d.items() if not k.startswith("_")}
    out["files"] = [
        {"filename": n, "checksum": hashlib.md5(b).hexdigest(), "filesize": len(b)}
        for n, b in sorted(st.buckets[d["_bucket"]].items())
    ]
    out["links"] = {
        "bucket": f"{st.base}/api/files/{d['_bucket']}",
        "html": f"{st.base}/deposit/{d['id']}",
        **(
            {"latest_draft": f"{st.base}/api/deposit/depositions/{d['_latest_draft']}"}
            if d.get("_latest_draft")
            else {}
        ),
    }
    return out


def make_handler(st: State) -> type[http.server.BaseHTTPRequestHandler]:
    class H(http.server.BaseHTTPRequestHandler):
        def _send(self, code: int, body: Any = None) -> None:
            data = json.dumps(body).encode() if body is not None else b""
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _send_bytes(self, data: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> bytes:
            n = int(self.headers.get("Content-Length") or 0)
            if n:
                return self.rfile.read(n)
            if self.headers.get("Transfer-Encoding") == "chunked":
                out = b""
                while True:
                    size = int(self.rfile.readline().strip(), 16)
                    if size == 0:
                        self.rfile.readline()
                        return out
                    out += self.rfile.read(size)
                    self.rfile.readline()
            return b""

        def _authed(self, q: dict[str, list[str]]) -> bool:
            hdr = self.headers.get("Authorization", "")
            return q.get("access_token", [""])[0] == st.token or hdr in (
                f"Bearer {st.token}",
                f"token {st.token}",
            )

        def handle_any(self, method: str) -> None:
            u = urlsplit(self.path)
            q = parse_qs(u.query)
            st.seen.append(f"{method} {u.path}")
            body = self._body()
            if u.path.startswith("/upload/"):  # figshare upload service (token-less, like S3)
                return self.figshare_upload(method, u.path, body)
            if method == "GET" and u.path.startswith("/api/handles/"):
                return self.doi_handle(u.path[len("/api/handles/") :])
            if method == "GET" and u.path.startswith("/api/records/"):
                return self.zenodo_public(u.path)
            if method == "GET" and u.path.startswith(("/v2/articles/", "/ndownloader/")):
                return self.figshare_public(u.path)
            if not self._authed(q):
                return self._send(401, {"message": "bad token"})
            if u.path.startswith("/api/"):
                return self.zenodo(method, u.path, body)
            if u.path.startswith("/v2/"):
                return self.figshare(method, u.path[3:], body)
            return self._send(404, {})

        def zenodo(self, method: str, path: str, body: bytes) -> None:
            if method == "POST" and path == "/api/deposit/depositions":
                st.next_id += 1
                i = st.next_id
                st.buckets[f"b{i}"] = {}
                meta = json.loads(body).get("metadata", {})
                meta["prereserve_doi"] = {"doi": f"10.5072/zenodo.{i}"}
                st.deps[i] = {
                    "id": i,
                    "conceptrecid": str(i - 0),
                    "metadata": meta,
                    "submitted": False,
                    "state": "unsubmitted",
                    "_bucket": f"b{i}",
                    "created": "2026-01-01T00:00:00+00:00",
                }
                return self._send(201, _dep_view(st, st.deps[i]))
            m = re.fullmatch(r"/api/files/(b\d+)/(.+)", path)
            if m and method == "PUT":
                st.buckets[m.group(1)][m.group(2)] = body
                return self._send(201, {"key": m.group(2), "size": len(body)})
            m = re.fullmatch(r"/api/deposit/depositions/(\d+)(/actions/(\w+))?", path)
            if not m or int(m.group(1)) not in st.deps:
                return self._send(404, {"message": "not found"})
            d = st.deps[int(m.group(1))]
            action = m.group(3)
            if action is None and method == "GET":
                return self._send(200, _dep_view(st, d))
            if action is None and method == "PUT":
                if d["submitted"]:
                    return self._send(400, {"message": "published: edit first"})
                d["metadata"] = {
                    **json.loads(body)["metadata"],
                    "prereserve_doi": d["metadata"]["prereserve_doi"],
                }
                return self._send(200, _dep_view(st, d))
            if action == "publish" and method == "POST":
                if not st.buckets[d["_bucket"]]:
                    return self._send(400, {"message": "no files"})
                d.update(
                    _published_at=st.now(),
                    submitted=True,
                    state="done",
                    doi=d["metadata"]["prereserve_doi"]["doi"],
                    conceptdoi=f"10.5072/zenodo.{d['conceptrecid']}",
                )
                return self._send(202, _dep_view(st, d))
            if action == "newversion" and method == "POST":
                if not d["submitted"]:
                    return self._send(400, {"message": "not published"})
                st.next_id += 1
                i = st.next_id
                st.buckets[f"b{i}"] = dict(st.buckets[d["_bucket"]])
                meta = {**d["metadata"], "prereserve_doi": {"doi": f"10.5072/zenodo.{i}"}}
                st.deps[i] = {
                    "id": i,
                    "conceptrecid": d["conceptrecid"],
                    "metadata": meta,
                    "submitted": False,
                    "state": "unsubmitted",
                    "_bucket": f"b{i}",
                    "conceptdoi": d["conceptdoi"],
                    "created": "2026-01-02T00:00:00+00:00",
                }
                d["_latest_draft"] = i
                return self._send(201, _dep_view(st, d))
            return self._send(405, {})

        def doi_handle(self, doi: str) -> None:
            """doi.org's handle API: ``{"responseCode": 1, "values": [{"type": "URL", ...}]}``."""
            if doi not in st.handles:
                return self._send(404, {"responseCode": 100, "handle": doi})
            value = {"type": "URL", "data": {"format": "string", "value": st.handles[doi]}}
            return self._send(200, {"responseCode": 1, "handle": doi, "values": [value]})

        def zenodo_public(self, path: str) -> None:
            m = re.fullmatch(r"/api/records/(\d+)(?:/files/([^/]+)/content)?", path)
            d = st.deps.get(int(m.group(1))) if m else None
            if m is None or d is None or not d["submitted"]:
                return self._send(404, {"status": 404, "message": "PID does not exist."})
            files = st.buckets[d["_bucket"]]
            if m.group(2):
                if m.group(2) not in files:
                    return self._send(404, {"status": 404, "message": "File not found."})
                return self._send_bytes(files[m.group(2)])
            i = d["id"]
            return self._send(
                200,
                {
                    "id": i,
                    "recid": str(i),
                    "conceptrecid": d["conceptrecid"],
                    "doi": d["doi"],
                    "conceptdoi": d["conceptdoi"],
                    "created": d["_published_at"],
                    "updated": d["_published_at"],
                    "metadata": {
                        **{k: v for k, v in d["metadata"].items() if k != "prereserve_doi"},
                        "publication_date": d["_published_at"][:10],
                    },
                    "files": [
                        {
                            "key": n,
                            "size": len(b),
                            "checksum": "md5:" + hashlib.md5(b).hexdigest(),
                            "links": {"self": f"{st.base}/api/records/{i}/files/{n}/content"},
                        }
                        for n, b in sorted(files.items())
                    ],
                    "links": {
                        "html": f"{st.base}/records/{i}",
                        "doi": f"https://doi.org/{d['doi']}",
                    },
                },
            )

        def _figshare_file(self, fid: int) -> bytes:
            up = st.uploads[str(fid)]
            return b"".join(up["parts"][k] for k in sorted(up["parts"]))

        def figshare_public(self, path: str) -> None:
            m = re.fullmatch(r"/ndownloader/files/(\d+)", path)
            if m:
                if m.group(1) not in st.uploads:
                    return self._send(404, {"message": "File not found", "code": "NotFound"})
                return self._send_bytes(self._figshare_file(int(m.group(1))))
            m = re.fullmatch(r"/v2/articles/(\d+)(?:/versions/(\d+))?", path)
            a = st.articles.get(int(m.group(1))) if m else None
            if m is None or a is None or a["version"] == 0:
                return self._send(
                    404, {"message": "Entity not found: article", "code": "EntityNotFound"}
                )
            return self._send(
                200,
                {
                    "id": a["id"],
                    "doi": a["doi"],
                    "version": a["version"],
                    "published_date": a["published_date"],
                    "figshare_url": f"{st.base}/articles/dataset/x/{a['id']}",
                    "files": [
                        {
                            "id": f["id"],
                            "name": f["name"],
                            "size": f.get("size", 0),
                            "computed_md5": hashlib.md5(self._figshare_file(f["id"])).hexdigest(),
                            "download_url": f"{st.base}/ndownloader/files/{f['id']}",
                        }
                        for f in sorted(a["files"].values(), key=lambda f: f["name"])
                    ],
                },
            )

        def figshare(self, method: str, path: str, body: bytes) -> None:
            if method == "POST" and path == "/account/articles":
                st.next_id += 1
                i = st.next_id
                st.articles[i] = {
                    "id": i,
                    "meta": json.loads(body),
                    "files": {},
                    "version": 0,
                    "doi": "",
                }
                return self._send(
                    201, {"entity_id": i, "location": f"{st.base}/v2/account/articles/{i}"}
                )
            m = re.fullmatch(r"/account/articles/(\d+)(/.*)?", path)
            if not m or int(m.group(1)) not in st.articles:
                return self._send(404, {})
            a, rest = st.articles[int(m.group(1))], m.group(2) or ""
            if rest == "" and method == "GET":
                return self._send(
                    200,
                    {
                        "id": a["id"],
                        "doi": a["doi"],
                        "version": a["version"],
                        "figshare_url": f"{st.base}/articles/{a['id']}",
                    },
                )
            if rest == "" and method == "PUT":
                a["meta"] = json.loads(body)
                return self._send(205, None)
            if rest == "/files" and method == "POST":
                req = json.loads(body)
                st.next_id += 1
                fid = st.next_id
                st.uploads[str(fid)] = {"art": a["id"], "req": req, "parts": {}}
                a["files"][fid] = {"id": fid, "name": req["name"], "status": "created"}
                return self._send(
                    201, {"location": f"{st.base}/v2/account/articles/{a['id']}/files/{fid}"}
                )
            if rest == "/files" and method == "GET":
                return self._send(200, list(a["files"].values()))
            m2 = re.fullmatch(r"/files/(\d+)", rest)
            if m2 and int(m2.group(1)) in a["files"]:
                fid = int(m2.group(1))
                if method == "GET":
                    return self._send(200, {"id": fid, "upload_url": f"{st.base}/upload/{fid}"})
                if method == "DELETE":
                    del a["files"][fid]
                    return self._send(204, None)
                if method == "POST":
                    up = st.uploads[str(fid)]
                    data = b"".join(up["parts"][k] for k in sorted(up["parts"]))
                    if hashlib.md5(data).hexdigest() != up["req"]["md5"]:
                        return self._send(400, {"message": "md5 mismatch"})
                    a["files"][fid].update(status="available", size=len(data))
                    return self._send(202, None)
            if rest == "/reserve_doi" and method == "POST":
                a["doi"] = f"10.6084/m9.figshare.{a['id']}"
                return self._send(200, {"doi": a["doi"]})
            if rest == "/publish" and method == "POST":
                if any(f["status"] != "available" for f in a["files"].values()):
                    return self._send(400, {"message": "incomplete upload"})
                a["version"] += 1
                a["published_date"] = st.now().replace("+00:00", "Z")
                return self._send(201, {"location": f"{st.base}/articles/{a['id']}"})
            return self._send(405, {})

        def figshare_upload(self, method: str, path: str, body: bytes) -> None:
            parts = path.split("/")
            up = st.uploads.get(parts[2])
            if up is None:
                return self._send(404, {})
            size = up["req"]["size"]
            if method == "GET" and len(parts) == 3:
                half = max(1, size // 2)
                layout = [{"partNo": 1, "startOffset": 0, "endOffset": half - 1}]
                if size > half:
                    layout.append({"partNo": 2, "startOffset": half, "endOffset": size - 1})
                return self._send(200, {"parts": layout})
            if method == "PUT" and len(parts) == 4:
                up["parts"][int(parts[3])] = body
                return self._send(200, None)
            return self._send(405, {})

        def do_GET(self) -> None:
            self.handle_any("GET")

        def do_POST(self) -> None:
            self.handle_any("POST")

        def do_PUT(self) -> None:
            self.handle_any("PUT")

        def do_DELETE(self) -> None:
            self.handle_any("DELETE")

        def log_message(self, *a: object) -> None:
            pass

    return H


@contextmanager
def serve(token: str) -> Iterator[State]:
    st = State(token=token)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), make_handler(st))
    st.base = f"http://127.0.0.1:{srv.server_address[1]}"
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield st
    finally:
        srv.shutdown()
        srv.server_close()
