"""Broken and hostile Kubernetes API servers on 127.0.0.1, for the client's tests (issue 29): a
server whose answers are set per path (JSON, a status, or raw behaviour: redirects, bodies
that are not JSON, huge or dripping answers, dropped connections), over HTTP or HTTPS with
certificates from throwaway CAs made with the openssl CLI; and a sink that counts what reaches
it. Every loop here is bounded in time and stops when the client goes away."""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

Behaviour = Callable[[BaseHTTPRequestHandler], None]
"""A raw answer: writes what it likes to the handler's socket."""

ESCAPES = "\x1b[31mRED\x1b[0m\x1b]0;pwned\x07\r\u202e"  # colour, a window title, a bell, a carriage return, RTL


# ---------------------------------------------------------------- certificates


@dataclass(frozen=True)
class Ca:
    cert: Path
    key: Path

    def pem(self) -> str:
        return self.cert.read_text()


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_ca(folder: Path, name: str) -> Ca:
    """A self-signed CA (EC P-256, a day)."""
    folder.mkdir(parents=True, exist_ok=True)
    cert, key = folder / f"{name}-ca.crt", folder / f"{name}-ca.key"
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
        "-subj", f"/CN={name} test CA", "-keyout", str(key), "-out", str(cert),
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
    )  # fmt: skip
    return Ca(cert, key)


def issue(ca: Ca, folder: Path, name: str, *, client: bool = False) -> tuple[Path, Path]:
    """A certificate signed by `ca`: for 127.0.0.1 and localhost, or (client) for a user."""
    cert, key, csr, ext = (folder / f"{name}.{x}" for x in ("crt", "key", "csr", "ext"))
    _openssl(
        "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-subj", f"/CN={name}", "-keyout", str(key), "-out", str(csr),
    )  # fmt: skip
    usage = "clientAuth" if client else "serverAuth"
    ext.write_text(f"extendedKeyUsage={usage}\n" + ("" if client else "subjectAltName=IP:127.0.0.1,DNS:localhost\n"))
    _openssl(
        "x509", "-req", "-in", str(csr), "-CA", str(ca.cert), "-CAkey", str(ca.key), "-CAcreateserial",
        "-days", "1", "-out", str(cert), "-extfile", str(ext),
    )  # fmt: skip
    return cert, key


@dataclass(frozen=True)
class Certs:
    """Two unrelated CAs: `cluster` (the kubeconfig's) and `system` (what the machine's store
    trusts, by $SSL_CERT_FILE in a test); a server certificate from each; a client certificate
    from the cluster's."""

    cluster: Ca
    system: Ca
    cluster_server: tuple[Path, Path]
    system_server: tuple[Path, Path]
    client: tuple[Path, Path]


def make_certs(folder: Path) -> Certs:
    cluster, system = make_ca(folder, "cluster"), make_ca(folder, "system")
    return Certs(
        cluster,
        system,
        issue(cluster, folder, "cluster-server"),
        issue(system, folder, "system-server"),
        issue(cluster, folder, "kaito-aks-user", client=True),
    )


# ---------------------------------------------------------------- raw answers


def _write(handler: BaseHTTPRequestHandler, data: bytes) -> bool:
    """False once the client has gone."""
    try:
        handler.wfile.write(data)
        handler.wfile.flush()
        return True
    except OSError:
        return False


def raw(status: int, body: bytes, content_type: str = "application/json", **headers: str) -> Behaviour:
    def answer(h: BaseHTTPRequestHandler) -> None:
        h.send_response(status)
        h.send_header("Content-Type", content_type)
        h.send_header("Content-Length", str(len(body)))
        for k, v in headers.items():
            h.send_header(k.replace("_", "-"), v)
        h.end_headers()
        _write(h, body)

    return answer


def redirect(location: str, status: int = 302) -> Behaviour:
    return raw(status, b"", "text/plain", Location=location)


def huge(total: int, declare: bool = False) -> Behaviour:
    """A JSON-looking body of `total` bytes (or only a Content-Length saying so, `declare`)."""

    def answer(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        if declare:
            h.send_header("Content-Length", str(total))
            h.end_headers()
            _write(h, b'{"items": [')
            time.sleep(5)  # and then nothing: the client must not wait for it
            return
        h.send_header("Connection", "close")
        h.end_headers()
        chunk = b'"' + b"x" * 65530 + b'",'
        sent = 0
        if not _write(h, b'{"items": ['):
            return
        while sent < total and _write(h, chunk):
            sent += len(chunk)
        h.close_connection = True

    return answer


def drip(seconds: float = 20.0, every: float = 0.2, headers_too: bool = False) -> Behaviour:
    """One byte every `every` seconds, for at most `seconds` (of the body, or of the headers)."""

    def answer(h: BaseHTTPRequestHandler) -> None:
        end = time.monotonic() + seconds
        if headers_too:
            text = b"HTTP/1.1 200 OK\r\n" + b"X-Slow: " + b"a" * 10_000
        else:
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.end_headers()
            text = b'{"items": [' + b" " * 10_000
        for i in range(len(text)):
            if time.monotonic() > end or not _write(h, text[i : i + 1]):
                break
            time.sleep(every)
        h.close_connection = True

    return answer


def hang_up(h: BaseHTTPRequestHandler) -> None:
    """Closes the connection without a word."""
    h.close_connection = True


def garbage(h: BaseHTTPRequestHandler) -> None:
    _write(h, b"SSH-2.0-OpenSSH_9.6\r\n\r\n")
    h.close_connection = True


def short_body(h: BaseHTTPRequestHandler) -> None:
    """Says 1000 bytes, sends 10, hangs up."""
    _write(h, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n" + b'{"items":[')
    h.close_connection = True


def broken_chunks(h: BaseHTTPRequestHandler) -> None:
    _write(h, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")
    h.close_connection = True


def many_headers(h: BaseHTTPRequestHandler) -> None:
    _write(h, b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(500)) + b"\r\n{}")
    h.close_connection = True


# Each answer of the API server's that is not a Kubernetes answer, by name.
BROKEN: dict[str, Behaviour] = {
    "html instead of JSON": raw(200, b"<html><body>Bad gateway</body></html>", "text/html"),
    "an empty body": raw(200, b""),
    "a JSON list": raw(200, b"[]"),
    "a JSON string": raw(200, b'"ok"'),
    "JSON cut short": raw(200, b'{"items": [{"metadata": '),
    "bytes that are not UTF-8": raw(200, b'{"items": "\xff\xfe"}'),
    "JSON nested 100000 deep": raw(200, b"[" * 100_000 + b"]" * 100_000),
    "a 500 that is not JSON": raw(500, b"<h1>oops</h1>", "text/html"),
    "a 503 Status": raw(503, b'{"kind": "Status", "message": "etcdserver: leader changed"}'),
    "a connection closed without an answer": hang_up,
    "not HTTP": garbage,
    "a body shorter than it says": short_body,
    "broken chunked encoding": broken_chunks,
    "500 headers": many_headers,
}


# ---------------------------------------------------------------- the servers


class _Handler(BaseHTTPRequestHandler):
    server: ApiServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.server.seen.append((self.path, self.headers.get("Authorization")))
        if isinstance(self.connection, ssl.SSLSocket) and self.connection.getpeercert():
            subject = dict(x[0] for x in self.connection.getpeercert()["subject"])  # type: ignore[index]
            self.server.client_names.append(str(subject.get("commonName")))
        answer = self.server.routes.get(self.path, self.server.routes.get("*"))
        if callable(answer):
            answer(self)
            self.close_connection = True
            return
        if isinstance(answer, int):
            body = json.dumps({"kind": "Status", "code": answer, "message": f"status {answer}"}).encode()
            status = answer
        elif answer is None:
            body, status = b'{"kind": "Status", "message": "not found"}', 404
        else:
            body, status = json.dumps(answer).encode(), 200
        raw(status, body)(self)
        self.close_connection = not self.server.keep_alive  # without saying so: the client finds out

    def log_message(self, *args: Any) -> None:
        pass

    def handle(self) -> None:
        with contextlib.suppress(OSError):  # the client went away, or refused our certificate: what is tested
            super().handle()


class ApiServer(ThreadingHTTPServer):
    """An API server on 127.0.0.1 answering GETs from `routes` (path with query -> a dict or
    list as JSON, an int as that status, a Behaviour; "*" for any other path; else 404).
    `seen`: each request's path and Authorization header. With `tls` (cert, key): HTTPS."""

    daemon_threads = True

    def __init__(self, tls: tuple[Path, Path] | None = None, client_ca: Ca | None = None):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.routes: dict[str, Any] = {}
        self.seen: list[tuple[str, str | None]] = []
        self.client_names: list[str] = []  # the CN of each client certificate presented
        self.accepted = 0  # connections
        self.keep_alive = True  # JSON answers leave the connection open
        self.scheme = "http"
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            if client_ca is not None:
                context.verify_mode = ssl.CERT_REQUIRED
                context.load_verify_locations(cafile=str(client_ca.cert))
            self.socket = context.wrap_socket(self.socket, server_side=True, do_handshake_on_connect=False)
            self.scheme = "https"
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, address = self.socket.accept()
        self.accepted += 1
        conn.settimeout(30)  # a client that stops talking frees the thread
        return conn, address

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.server_port}"

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class Sink:
    """Where a hostile server sends the client: counts every connection and keeps what arrives."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.connections = 0
        self.received = b""
        self._stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self.listener.getsockname()[1])

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            with conn:
                conn.settimeout(1)
                try:
                    self.received += conn.recv(65536)
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
                    # Read what the client sends next (a TLS hello through a CONNECT tunnel) before
                    # closing: closing on unread bytes sends a reset, and the client would see
                    # "connection reset" instead of the end of the stream, as it happened to.
                    conn.settimeout(0.5)
                    while conn.recv(65536):
                        pass
                except OSError:
                    pass

    def stop(self) -> None:
        self._stop.set()
        self.listener.close()


def kubeconfig(server: str, user: dict[str, Any] | None = None, **cluster: Any) -> dict[str, Any]:
    """A one-context kubeconfig (as a map) for `server`: the user (a token by default) and more
    cluster fields (certificate-authority-data, ...)."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "hostile", "cluster": {"server": server, **cluster}}],
        "users": [{"name": "u", "user": user if user is not None else {"token": TOKEN}}],
        "contexts": [{"name": "hostile", "context": {"cluster": "hostile", "user": "u"}}],
        "current-context": "hostile",
    }


TOKEN = "hostile-test-bearer-token"
