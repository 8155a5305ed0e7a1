"""A trace backend behind HTTPS whose certificate the machine trusts (a company's own CA) is read, as the urllib
client read it: the one HTTP client checks the system's certificates (``SSL_CERT_FILE``), not only requests'
bundle; one the machine does not trust is refused, never read unchecked."""

from __future__ import annotations

import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from _badinput import run_cli

DOC = b'{"error":{"httpCode":404,"message":"No traces found"}}'


@pytest.fixture
def https_jaeger(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A stub answering every GET with an empty api_v3 result over TLS, its self-signed certificate's path."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: no certificate can be made for the HTTPS stub")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    make = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert)]
    subprocess.run(
        [*make, "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True,
        capture_output=True,
        timeout=60,
    )

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(DOC)))
            self.end_headers()
            self.wfile.write(DOC)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", cert
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_a_backend_whose_ca_the_machine_trusts_is_read(
    https_jaeger: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, cert = https_jaeger
    for var in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the machine's trust store, as openssl reads it
    result = run_cli(["check", "--from-jaeger", url, "--service", "shop-agent", "--timeout", "10"])
    # reached and read: Jaeger's "No traces found" is "nothing to grade", not a certificate error
    assert result.code == 2
    assert "Jaeger has no traces for service 'shop-agent'" in result.err, result.err


def test_a_backend_the_machine_does_not_trust_is_refused(
    https_jaeger: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = https_jaeger
    for var in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE"):
        monkeypatch.delenv(var, raising=False)
    result = run_cli(["check", "--from-jaeger", url, "--service", "shop-agent", "--timeout", "10"])
    assert result.code == 2
    assert "cannot reach Jaeger" in result.err and "certificate" in result.err.lower(), result.err
