"""A throwaway RFC 3161 time-stamping authority for offline tests.

``make_tsa`` generates a CA and a TSA certificate with openssl; ``serve_tsa`` answers
``application/timestamp-query`` POSTs on loopback by running ``openssl ts -reply``.
"""

from __future__ import annotations

import http.server
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CONF = """
[ req ]
distinguished_name = dn
prompt = no
[ dn ]
CN = placeholder
[ tsa_ext ]
basicConstraints = critical, CA:false
keyUsage = critical, digitalSignature, nonRepudiation
extendedKeyUsage = critical, timeStamping
subjectKeyIdentifier = hash
[ ca_ext ]
basicConstraints = critical, CA:true
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[ tsa ]
default_tsa = tsa_config
[ tsa_config ]
dir = {d}
serial = {d}/serial
crypto_device = builtin
signer_cert = {d}/tsa.pem
certs = {d}/ca.pem
signer_key = {d}/tsa.key
signer_digest = sha256
default_policy = 1.2.3.4.1
other_policies = 1.2.3.4.5
digests = sha256
accuracy = secs:1
ordering = yes
tsa_name = yes
ess_cert_id_chain = no
ess_cert_id_alg = sha256
"""


def _run(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_tsa(d: Path, name: str = "Test TSA") -> Path:
    """Create CA + TSA keys/certs and an openssl config in ``d``; return the config path."""
    d.mkdir(parents=True, exist_ok=True)
    conf = d / "tsa.cnf"
    conf.write_text(CONF.format(d=d))
    (d / "serial").write_text("01\n")
    _run(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "30",
        "-subj",
        f"/CN={name} Root",
        "-config",
        str(conf),
        "-extensions",
        "ca_ext",
        cwd=d,
    )
    _run(
        "req",
        "-new",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "tsa.key",
        "-out",
        "tsa.csr",
        "-subj",
        f"/CN={name}",
        "-config",
        str(conf),
        cwd=d,
    )
    _run(
        "x509",
        "-req",
        "-in",
        "tsa.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "tsa.pem",
        "-days",
        "30",
        "-extfile",
        str(conf),
        "-extensions",
        "tsa_ext",
        cwd=d,
    )
    return conf


@contextmanager
def serve_tsa(d: Path) -> Iterator[str]:
    conf = d / "tsa.cnf"

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.headers.get("Content-Type") != "application/timestamp-query":
                self.send_response(415)
                self.end_headers()
                return
            with tempfile.TemporaryDirectory() as tmp:
                q = Path(tmp) / "q.tsq"
                q.write_bytes(body)
                out = Path(tmp) / "r.tsr"
                subprocess.run(
                    [
                        "openssl",
                        "ts",
                        "-reply",
                        "-config",
                        str(conf),
                        "-queryfile",
                        str(q),
                        "-out",
                        str(out),
                    ],
                    check=True,
                    capture_output=True,
                )
                data = out.read_bytes()
            self.send_response(200)
            self.send_header("Content-Type", "application/timestamp-reply")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *a: object) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/tsa"
    finally:
        srv.shutdown()
        srv.server_close()
