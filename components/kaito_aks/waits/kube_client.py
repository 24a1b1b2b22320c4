"""Calls to a Kubernetes API server with a kubeconfig's credentials, made so that a broken or
hostile API server can neither take the credentials elsewhere nor hang, flood or crash its
caller (issue 29). Standard library only. GETs, and one kind of write: a JSON merge patch
(`patch`), with which the step that hands Karpenter's CRDs to their Helm chart labels them.
Azure Resource Manager is read through it too (kaito_aks.azure.arm.LiveArm: a bearer token, the
same guarantees).

The waits (in Pulumi's dynamic-provider process, during `pulumi up`) and `python -m stacks
status` read a few objects with the stack's kubeconfig, read as kubectl reads it: the contents,
a path, or $KUBECONFIG's files merged (the first to name an entry wins) else ~/.kube/config; a
context; file paths relative to the file that names them; the cluster's CA (data, else file) or
insecure-skip-tls-verify (never both, as kubectl refuses), tls-server-name, proxy-url else
$HTTPS_PROXY / $NO_PROXY (loopback never proxied); bearer tokens (also from a file, read again
on a 401), client certificates, basic auth, impersonation (`as`, `as-groups`, `as-uid`,
`as-user-extra`), and exec credential plugins (kubelogin on Entra ID AKS clusters, aws eks
get-token, gke-gcloud-auth-plugin), run again when their credential expires or is refused.
Legacy auth-providers are refused by name rather than ignored. Reading the kubeconfig and running
its plugins: kubeconfig.py; the connection and the guarantees below: here.

Every call guarantees:
- no redirect is followed: a 3xx is an error naming where it pointed, so the token and the client
  certificate reach the kubeconfig's server and no other host;
- the kubeconfig's CA alone when it names one (the system's store only when it names none);
- one deadline for the whole call (connect, TLS handshake, headers and body; a wait's own limit
  on top, `deadline`): a server that drips bytes cannot hold it longer;
- at most MAX_RESPONSE_BYTES read: a larger answer is an error, not the process's memory;
- a JSON object back, or a `KubeApiError` whose text is one line with the cluster's own words
  escaped and bounded (never a raw terminal escape, never a traceback of the caller's).

Why not a maintained client library. The official `kubernetes` client (37.x) reads kubeconfigs
much as kubectl does, but follows redirects (urllib3 drops the Authorization header on another
host, yet presents the client certificate there and returns that host's answer as the cluster's),
caps neither the size nor the total time of an answer, keeps client keys in temp files until the
process exits, and costs about 30 packages (requests, oauthlib, aiohttp; 188 MB) and 0.5 s of
import in every dynamic-provider process. lightkube 1.0 (on httpx2) follows no redirect, but
caps neither size nor total time either, and its kubeconfig reader lacks what clusters hand out:
exec apiVersion client.authentication.k8s.io/v1, KUBERNETES_EXEC_INFO (provideClusterInfo),
certificates from exec plugins, several $KUBECONFIG files, tls-server-name; 19 packages, 0.2 to
0.35 s of import. With either, the guarantees above would still be code of ours wrapped around
it; on http.client (45 ms of import, nothing to pin) they are the whole client.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import ipaddress
import json
import math
import os
import socket
import ssl
import tempfile
import time
import urllib.parse
from collections.abc import Generator
from pathlib import Path
from typing import Any, Protocol

from kaito_aks import __version__
from kaito_aks.parsed import is_dict, is_list
from kaito_aks.problems import bounded
from kaito_aks.waits.kubeconfig import (
    KubeconfigError,
    data_field,
    exec_credential,
    load_kubeconfig,
    named,
    os_reason,
    rfc3339,
    text_field,
)

REQUEST_TIMEOUT_SECONDS = 30.0  # one call, from connecting to the answer's last byte
MAX_RESPONSE_BYTES = 32 * 1024 * 1024  # a list of 1,000 nodes is about 20 MiB
ERROR_BODY_BYTES = 64 * 1024  # read of an error answer, for its message
MAX_TEXT_BYTES = 64 * 1024  # of a text answer (a container's log tail)
EXPIRY_MARGIN_SECONDS = 10  # an exec credential is renewed this long before it expires
_CHUNK = 64 * 1024
API_SERVER = "the API server"


class Reader(Protocol):
    """What reads the cluster: a KubeClient, or a stand-in for it in tests."""

    def get(self, path: str, **query: str) -> dict[str, Any]: ...


class Writer(Reader, Protocol):
    """What also writes to the cluster (a JSON merge patch): a KubeClient, or a stand-in."""

    def patch(self, path: str, body: dict[str, Any]) -> dict[str, Any]: ...


MERGE_PATCH = "application/merge-patch+json"


class KubeApiError(RuntimeError):
    """The API server answered with an error status, or gave no usable answer (status 0: not
    reached, cut off, too slow, too large, not a JSON object). `fatal`: retrying cannot help (a
    certificate the kubeconfig's CA does not sign, a redirect). One line, escaped."""

    def __init__(self, status: int, message: str, fatal: bool = False):
        said = bounded(message)
        super().__init__(f"HTTP {status}: {said}" if status else said)
        self.status = status
        self.fatal = fatal


def _header_value(value: str, what: str) -> None:
    """Refuse what an HTTP header cannot carry (or would carry into another header)."""
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        raise KubeconfigError(f"{what} holds characters an HTTP header cannot carry") from None
    if "\r" in value or "\n" in value:
        raise KubeconfigError(f"{what} holds a line break")


# ---------------------------------------------------------------- sockets with one deadline


class _DeadlineSocket(socket.socket):
    """A socket whose every send and receive waits only until `deadline` (time.monotonic())."""

    deadline: float = math.inf

    def recv(self, bufsize: int, flags: int = 0, /) -> bytes:
        _arm(self)
        return super().recv(bufsize, flags)

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        _arm(self)
        return super().recv_into(buffer, nbytes, flags)

    def send(self, data: Any, flags: int = 0, /) -> int:
        _arm(self)
        return super().send(data, flags)

    def sendall(self, data: Any, flags: int = 0, /) -> None:
        _arm(self)
        super().sendall(data, flags)


class _DeadlineSSLSocket(ssl.SSLSocket):
    """The same for TLS (a context's `sslsocket_class`); the handshake too."""

    deadline: float = math.inf

    def do_handshake(self, block: bool = False) -> None:
        _arm(self)
        super().do_handshake(block)

    def recv(self, buflen: int = 1024, flags: int = 0) -> bytes:
        _arm(self)
        return super().recv(buflen, flags)

    def recv_into(self, buffer: Any, nbytes: int | None = None, flags: int = 0) -> int:
        _arm(self)
        return super().recv_into(buffer, nbytes, flags)

    def send(self, data: Any, flags: int = 0) -> int:
        _arm(self)
        return super().send(data, flags)

    def sendall(self, data: Any, flags: int = 0) -> None:
        _arm(self)
        super().sendall(data, flags)


def _arm(sock: _DeadlineSocket | _DeadlineSSLSocket) -> None:
    left = sock.deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the deadline has passed")
    sock.settimeout(left)


def _open_socket(host: str, port: int, deadline: float) -> _DeadlineSocket:
    last: OSError | None = None
    for family, kind, proto, _, address in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        sock = _DeadlineSocket(family, kind, proto)
        sock.deadline = deadline
        try:
            _arm(sock)
            sock.connect(address)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock
        except OSError as err:
            sock.close()
            last = err
    raise last or OSError(f"{host} has no address")


class _Connection(http.client.HTTPConnection):
    """One HTTP(S) connection whose every step (connect, proxy CONNECT, TLS handshake, request,
    answer) ends by `deadline`. `through`: the host:port to tunnel to through the proxy it
    connects to, and the CONNECT's headers."""

    def __init__(
        self,
        host: str,
        port: int,
        deadline: float,
        tls: ssl.SSLContext | None,
        server_hostname: str,
        through: tuple[str, dict[str, str]] | None = None,
    ):
        super().__init__(host, port)
        self.deadline, self.tls, self.server_hostname, self.through = deadline, tls, server_hostname, through

    def arm(self, deadline: float) -> None:
        """The deadline of the next call on this connection (it may be kept open between calls)."""
        self.deadline = deadline
        if isinstance(self.sock, _DeadlineSocket | _DeadlineSSLSocket):
            self.sock.deadline = deadline

    def connect(self) -> None:
        self.sock = _open_socket(self.host, self.port, self.deadline)
        if self.through is not None:
            target, headers = self.through
            lines = [f"CONNECT {target} HTTP/1.1", f"Host: {target}", *(f"{k}: {v}" for k, v in headers.items())]
            self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
            answer = http.client.HTTPResponse(self.sock, method="CONNECT")
            answer.begin()
            if answer.status != 200:
                raise OSError(f"the proxy refused the tunnel to {target} ({answer.status} {answer.reason})")
        if self.tls is not None:
            wrapped = self.tls.wrap_socket(
                self.sock, server_hostname=self.server_hostname, do_handshake_on_connect=False
            )
            assert isinstance(wrapped, _DeadlineSSLSocket)
            wrapped.deadline = self.deadline
            self.sock = wrapped
            wrapped.do_handshake()


class _TooLargeError(Exception):
    pass


def _read(resp: http.client.HTTPResponse, limit: int, *, cut: bool = False) -> bytes:
    """The answer's body, at most `limit` bytes: more is _TooLargeError (or, with `cut`, left unread)."""
    declared = (resp.getheader("Content-Length") or "").strip()
    if not cut and declared.isdigit() and int(declared) > limit:
        raise _TooLargeError
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = resp.read(min(_CHUNK, limit + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            if cut:
                return b"".join(chunks)[:limit]
            raise _TooLargeError


def _status_message(body: bytes, reason: str) -> str:
    """A Kubernetes Status's message (an Azure Resource Manager error's code and message: ARM
    answers {"error": {"code", "message"}}), else the HTTP reason phrase."""
    try:
        status: object = json.loads(body)
    except (ValueError, RecursionError):
        return reason or "no message"
    message = status.get("message") if is_dict(status) else None
    if isinstance(message, str) and message:
        return message
    error = status.get("error") if is_dict(status) else None
    said = [x for x in (error.get("code"), error.get("message")) if isinstance(x, str) and x] if is_dict(error) else []
    return ": ".join(said) or reason or "no message"


def _json_object(body: bytes, what: str, content_type: str, server: str = API_SERVER) -> dict[str, Any]:
    try:
        answer: object = json.loads(body)
    except (ValueError, RecursionError):
        kind = f", {content_type}" if content_type else ""
        raise KubeApiError(0, f"{server}'s answer to {what} is not JSON ({len(body)} bytes{kind})") from None
    if not is_dict(answer):
        raise KubeApiError(0, f"{server}'s answer to {what} is JSON but not an object")
    return answer


# ---------------------------------------------------------------- TLS, proxies and credentials


def _tls_context(cluster: dict[str, Any], where: str, cert: bytes | None, key: bytes | None) -> ssl.SSLContext:
    """TLS as kubectl sets it up: the cluster's CA alone when it names one, else the system's
    store; or no verification with insecure-skip-tls-verify (never with a CA)."""
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # checks the certificate and host name, loads no CA
    tls.minimum_version = ssl.TLSVersion.TLSv1_2
    tls.sslsocket_class = _DeadlineSSLSocket
    insecure = cluster.get("insecure-skip-tls-verify", False)
    if not isinstance(insecure, bool):
        raise KubeconfigError(f"{where}: insecure-skip-tls-verify is not true or false")
    ca = data_field(cluster, "certificate-authority", where)
    if insecure and ca is not None:
        raise KubeconfigError(
            f"{where}: insecure-skip-tls-verify is set with a certificate-authority, which kubectl refuses: drop one"
        )
    try:
        if insecure:
            tls.check_hostname = False
            tls.verify_mode = ssl.CERT_NONE
        elif ca is not None:
            tls.load_verify_locations(cadata=ca.decode("ascii") if ca.lstrip().startswith(b"-----") else ca)
        else:
            tls.load_default_certs()
    except (ssl.SSLError, ValueError, UnicodeDecodeError):
        raise KubeconfigError(f"{where}: its certificate-authority holds no valid certificate") from None
    if cert is not None and key is not None:
        with _private_paths(cert, key) as (cert_path, key_path):
            try:
                tls.load_cert_chain(cert_path, key_path)
            except (ssl.SSLError, ValueError):
                raise KubeconfigError(
                    f"{where}: its client certificate or key is not valid, or they do not match"
                ) from None
    return tls


@contextlib.contextmanager
def _private_paths(*blobs: bytes) -> Generator[list[str]]:
    """File paths holding `blobs` that only this process can read, gone afterwards (ssl loads a
    client certificate from files only): memory files on Linux, else a private temp dir."""
    create = getattr(os, "memfd_create", None)
    if create is not None and os.path.isdir("/proc/self/fd"):
        fds: list[int] = []
        try:
            for blob in blobs:
                fd: int = create("kaito-aks-credential", os.MFD_CLOEXEC)
                fds.append(fd)
                view = memoryview(blob)
                while view:
                    view = view[os.write(fd, view) :]
            yield [f"/proc/self/fd/{fd}" for fd in fds]
        finally:
            for fd in fds:
                os.close(fd)
        return
    with tempfile.TemporaryDirectory(prefix="kaito-aks-") as tmp:  # created 0700
        paths: list[str] = []
        for i, blob in enumerate(blobs):
            path = Path(tmp, f"credential-{i}")
            path.touch(mode=0o600)
            path.write_bytes(blob)
            paths.append(str(path))
        yield paths


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _environ(name: str) -> str:
    return os.environ.get(name) or os.environ.get(name.lower()) or ""


def _not_proxied(host: str, no_proxy: str) -> bool:
    """Whether $NO_PROXY names the host: `*`, the host or a parent domain, an IP or a CIDR range."""
    for entry in no_proxy.replace(" ", "").lower().split(","):
        if entry == "*":
            return True
        entry = entry.lstrip(".")
        if entry and (host == entry or host.endswith("." + entry)):
            return True
        with contextlib.suppress(ValueError):
            if ipaddress.ip_address(host) in ipaddress.ip_network(entry, strict=False):
                return True
    return False


def _proxy(cluster: dict[str, Any], where: str, scheme: str, host: str) -> urllib.parse.SplitResult | None:
    """The proxy to go through, as kubectl chooses it: the cluster's proxy-url, else
    $HTTPS_PROXY/$HTTP_PROXY unless $NO_PROXY names the host (loopback never); http:// only."""
    url = text_field(cluster, "proxy-url", where)
    if url is None:
        variable = f"{scheme.upper()}_PROXY"
        url = _environ(variable)
        if not url or _is_loopback(host) or _not_proxied(host, _environ("NO_PROXY")):
            return None
        where = f"${variable}"
    proxy = urllib.parse.urlsplit(url if "://" in url else f"http://{url}")
    if proxy.scheme != "http" or not proxy.hostname:
        raise KubeconfigError(f"{where}: only http:// proxies are supported (through CONNECT), not {proxy.scheme}://")
    return proxy


class KubeClient:
    """GETs (and merge patches) to one API server with one kubeconfig user's credentials (see the
    module's guarantees)."""

    def __init__(self, cluster: dict[str, Any], user: dict[str, Any], cluster_name: str, user_name: str):
        self.where = f"the kubeconfig's cluster {cluster_name!r}"
        self.user_where = f"the kubeconfig's user {user_name!r}"
        server = text_field(cluster, "server", self.where)
        if server is None:
            raise KubeconfigError(f"{self.where} has no server")
        parts = urllib.parse.urlsplit(server)
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            port = 0
        if parts.scheme not in ("http", "https") or not parts.hostname or not port or parts.username or parts.query:
            raise KubeconfigError(f"{self.where}: its server is not an http(s)://host[:port] address")
        self.server = f"{parts.scheme}://{parts.netloc}"
        self.prefix = parts.path.rstrip("/")
        self.host, self.port = parts.hostname, port
        self.server_hostname = text_field(cluster, "tls-server-name", self.where) or parts.hostname
        self.proxy = _proxy(cluster, self.where, parts.scheme, parts.hostname)
        self.cluster, self.user = cluster, user
        self.timeout_seconds = REQUEST_TIMEOUT_SECONDS
        self.called = API_SERVER  # what the server is, in the errors (Azure Resource Manager, through this client)
        self.max_bytes = MAX_RESPONSE_BYTES
        self.deadline: float | None = None  # time.monotonic() by which every call must end (a wait's limit)
        if is_dict(user.get("auth-provider")):
            provider = user["auth-provider"].get("name")
            raise KubeconfigError(
                f"{self.user_where} logs in with the auth-provider {provider!r}, which kubectl no longer supports "
                "(1.26): use its exec plugin instead (AKS: kubelogin convert-kubeconfig)"
            )
        self.renewable = is_dict(user.get("exec")) or bool(user.get("tokenFile"))
        self.expires: float | None = None
        self.authorization: str | None = None
        self.tls: ssl.SSLContext | None = None
        self._conn: _Connection | None = None  # kept open between calls while the server allows
        self._impersonation = self._impersonation_headers()
        self._log_in()

    @classmethod
    def from_kubeconfig(
        cls, contents: str | dict[str, Any] | None = None, path: str | None = None, context: str | None = None
    ) -> KubeClient:
        config = load_kubeconfig(contents, path)
        name = context or config.get("current-context")
        if not name:
            raise KubeconfigError("the kubeconfig has no current-context; name a context")
        ctx = named(config, "contexts", name)
        cluster_name, user_name = ctx.get("cluster"), ctx.get("user")
        if not isinstance(cluster_name, str) or not cluster_name:
            raise KubeconfigError(f"the kubeconfig's context {name!r} names no cluster")
        user = named(config, "users", user_name) if isinstance(user_name, str) and user_name else {}
        return cls(named(config, "clusters", cluster_name), user, cluster_name, str(user_name or ""))

    # -------------------------------------------------------- credentials

    def _log_in(self) -> None:
        """The credentials, fetched anew (a token file read again, an exec plugin run again)."""
        self._close()
        user, where = self.user, self.user_where
        token = text_field(user, "token", where)
        if token is None and text_field(user, "tokenFile", where):
            token = (data_field(user, "tokenFile", where) or b"").decode(errors="replace").strip()
        cert, key = data_field(user, "client-certificate", where), data_field(user, "client-key", where)
        spec = user.get("exec")
        if spec is not None:
            if not is_dict(spec):
                raise KubeconfigError(f"{where}: exec is not a map")
            status = exec_credential(spec, self.cluster, where)
            given = status.get("token")
            token = given if isinstance(given, str) and given else token
            if status.get("clientCertificateData") is not None or status.get("clientKeyData") is not None:
                cert_data, key_data = status.get("clientCertificateData"), status.get("clientKeyData")
                if not isinstance(cert_data, str) or not isinstance(key_data, str):
                    raise KubeconfigError(
                        f"credential plugin {spec.get('command')!r} gave a client certificate without its key"
                    )
                cert, key = cert_data.encode(), key_data.encode()
            self.expires = rfc3339(status.get("expirationTimestamp"))
        if (cert is None) != (key is None):
            raise KubeconfigError(f"{where} has a client certificate without its key, or a key without its certificate")
        username, password = text_field(user, "username", where), text_field(user, "password", where)
        if token:
            _header_value(token, f"{where}: its token")
            self.authorization = f"Bearer {token}"
        elif username and password:
            self.authorization = "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()
        else:
            self.authorization = None
        if self.server.startswith("https://"):
            self.tls = _tls_context(self.cluster, self.where, cert, key)

    def _impersonation_headers(self) -> list[tuple[str, str]]:
        """`as`, `as-groups`, `as-uid`, `as-user-extra` as kubectl sends them."""
        user, where = self.user, self.user_where
        impersonate = text_field(user, "as", where)
        if not impersonate:
            return []
        headers = [("Impersonate-User", impersonate)]
        groups: object = user.get("as-groups") or []
        headers += [("Impersonate-Group", g) for g in (groups if is_list(groups) else []) if isinstance(g, str)]
        uid = text_field(user, "as-uid", where)
        if uid:
            headers.append(("Impersonate-Uid", uid))
        extra: object = user.get("as-user-extra") or {}
        for k, values in extra.items() if is_dict(extra) else ():
            for v in values if is_list(values) else []:
                headers.append((f"Impersonate-Extra-{urllib.parse.quote(str(k), safe='')}", str(v)))
        for _, value in headers:
            _header_value(value, f"{where}: its impersonation")
        return headers

    def _headers(self) -> list[tuple[str, str]]:
        headers = [("Accept", "application/json"), ("User-Agent", f"kaito-aks/{__version__}")]
        if self.authorization:
            headers.append(("Authorization", self.authorization))
        return headers + self._impersonation

    # -------------------------------------------------------- calls

    def get(self, path: str, **query: str) -> dict[str, Any]:
        """GET a path (with its query), as a JSON object; KubeApiError otherwise. An expired
        exec credential is renewed first; a 401 renews a renewable one (token file, exec) once."""
        body, content_type = self._renewed("GET", path, query, self.max_bytes)
        return _json_object(body, f"GET {path}", content_type, self.called)

    def get_text(self, path: str, **query: str) -> str:
        """GET a path whose answer is text (a container's log), at most MAX_TEXT_BYTES of it (the
        rest is not read), decoded, with the same guarantees as `get`."""
        body, _ = self._renewed("GET", path, query, MAX_TEXT_BYTES, cut=True)
        return body.decode("utf-8", errors="replace")

    def patch(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """A JSON merge patch (RFC 7386) of the object at `path`: the object as stored after it,
        with the same guarantees and credential renewal as `get`."""
        answer, content_type = self._renewed("PATCH", path, {}, self.max_bytes, payload=json.dumps(body).encode())
        return _json_object(answer, f"PATCH {path}", content_type, self.called)

    def _renewed(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        limit: int,
        cut: bool = False,
        payload: bytes | None = None,
    ) -> tuple[bytes, str]:
        if self.expires is not None and time.time() >= self.expires - EXPIRY_MARGIN_SECONDS:
            self._log_in()
        try:
            return self._call(method, path, query, limit, cut, payload)
        except KubeApiError as err:
            if err.status != 401 or not self.renewable:
                raise
        self._log_in()
        return self._call(method, path, query, limit, cut, payload)

    def _call(
        self, method: str, path: str, query: dict[str, str], limit: int, cut: bool, payload: bytes | None
    ) -> tuple[bytes, str]:
        what = f"{method} {path}"
        start = time.monotonic()
        deadline = start + self.timeout_seconds
        if self.deadline is not None:
            deadline = min(deadline, self.deadline)
        if deadline <= start:
            raise KubeApiError(0, f"no time is left for {what}: the wait's own limit has passed")
        target = self.prefix + path + ("?" + urllib.parse.urlencode(query) if query else "")
        headers = self._headers()
        if self.proxy is not None and self.tls is None:  # plain HTTP through a proxy: the absolute URL, as kubectl
            target = self.server + target
            headers += list(self._proxy_authorization().items())
        if payload is not None:
            headers.append(("Content-Type", MERGE_PATCH))
        try:
            reused = self._conn is not None
            try:
                resp = self._ask(deadline, method, target, headers, payload)
            except (http.client.RemoteDisconnected, ConnectionError, ssl.SSLEOFError):
                if not reused:
                    raise
                self._close()  # the server had closed the idle connection: once more on a new one
                resp = self._ask(deadline, method, target, headers, payload)
            if 300 <= resp.status < 400:
                where = resp.getheader("Location") or "no location"
                fix = ": point the kubeconfig at the API server itself" if self.called == API_SERVER else ""
                raise KubeApiError(
                    resp.status,
                    f"{self.called} redirects {what} to {where}; kaito-aks follows no redirect (the credentials "
                    f"go to {self.server} only){fix}",
                    fatal=True,
                )
            if not 200 <= resp.status < 300:
                message = _status_message(_read(resp, ERROR_BODY_BYTES, cut=True), resp.reason)
                raise KubeApiError(resp.status, message)
            body = _read(resp, limit, cut=cut)
            content_type = resp.getheader("Content-Type") or ""
            if resp.will_close or cut:
                self._close()  # (a cut answer leaves bytes unread on the connection)
        except KubeApiError:
            self._close()
            raise
        except _TooLargeError:
            self._close()
            raise KubeApiError(
                0,
                f"{self.called}'s answer to {what} is larger than {limit // 2**20} MiB, which kaito-aks does not read",
                fatal=True,
            ) from None
        except TimeoutError:
            self._close()
            took = deadline - start
            raise KubeApiError(0, f"{self.server} did not answer {what} in full within {took:.3g}s") from None
        except ssl.SSLCertVerificationError as err:
            self._close()
            trusted = "the kubeconfig's certificate-authority" if self._names_ca() else "the system's certificates"
            raise KubeApiError(
                0,
                f"{self.called} at {self.server} is not trusted ({err.verify_message}): {trusted} do not sign its "
                "certificate",
                fatal=True,
            ) from None
        except ssl.SSLError as err:
            self._close()
            raise KubeApiError(0, f"TLS with {self.server} failed ({err.reason or type(err).__name__})") from None
        except http.client.HTTPException as err:
            self._close()
            raise KubeApiError(0, f"{self.server} broke off its answer to {what} ({type(err).__name__})") from None
        except OSError as err:
            self._close()
            raise KubeApiError(0, f"cannot reach {self.server}: {os_reason(err)}") from None
        return body, content_type

    def _ask(
        self, deadline: float, method: str, target: str, headers: list[tuple[str, str]], body: bytes | None
    ) -> http.client.HTTPResponse:
        """Send the call on the open connection (re-armed with this call's deadline) or a new one."""
        conn = self._conn
        if conn is None:
            host = f"[{self.host}]" if ":" in self.host else self.host
            if self.proxy is None:
                conn = _Connection(host, self.port, deadline, self.tls, self.server_hostname)
            else:
                through = (f"{host}:{self.port}", self._proxy_authorization()) if self.tls is not None else None
                proxy = (self.proxy.hostname or "", self.proxy.port or 80)
                conn = _Connection(*proxy, deadline, self.tls, self.server_hostname, through)
            self._conn = conn
        conn.arm(deadline)
        conn.putrequest(method, target, skip_accept_encoding=True)
        for name, value in headers:
            conn.putheader(name, value)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        return conn.getresponse()

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _names_ca(self) -> bool:
        return bool(self.cluster.get("certificate-authority-data") or self.cluster.get("certificate-authority"))

    def _proxy_authorization(self) -> dict[str, str]:
        proxy = self.proxy
        if proxy is None or proxy.username is None:
            return {}
        secret = f"{urllib.parse.unquote(proxy.username)}:{urllib.parse.unquote(proxy.password or '')}"
        return {"Proxy-Authorization": "Basic " + base64.b64encode(secret.encode()).decode()}
