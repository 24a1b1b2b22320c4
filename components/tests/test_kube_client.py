"""The Kubernetes client of the waits and `status` against broken and hostile API servers on
127.0.0.1 (issue 29): credentials never leave the API server's host, the kubeconfig's CA alone,
one deadline per call and per wait, a bounded answer, every broken answer a one-line error the
waits retry, the cluster's words escaped; and kubeconfigs read as kubectl reads them."""

from __future__ import annotations

import base64
import json
import stat
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from hostile_api import (
    BROKEN,
    ESCAPES,
    TOKEN,
    ApiServer,
    Certs,
    Sink,
    drip,
    huge,
    kubeconfig,
    make_certs,
    raw,
    redirect,
)
from kaito_aks.waits.gpu_nodes import wait_for_gpu_nodes
from kaito_aks.waits.kube_client import MAX_RESPONSE_BYTES, KubeApiError, KubeClient, KubeconfigError
from kaito_aks.waits.model_ready import ModelReadyProvider, Watched, wait_for_models

NODES = "/api/v1/nodes"
WS = Watched("Workspace", "kaito.sh/v1beta1", "default", "phi-0", "InferenceReady")


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def api() -> Iterator[ApiServer]:
    server = ApiServer()
    yield server
    server.stop()


@pytest.fixture
def tls_api(certs: Certs) -> Iterator[ApiServer]:
    server = ApiServer(tls=certs.cluster_server)
    yield server
    server.stop()


@pytest.fixture
def sink() -> Iterator[Sink]:
    s = Sink()
    yield s
    s.stop()


def b64(text: str | bytes) -> str:
    return base64.b64encode(text.encode() if isinstance(text, str) else text).decode()


def pinned(server: ApiServer, certs: Certs, **user: Any) -> KubeClient:
    """A client of `server` that trusts the cluster's CA, with a token (or `user`)."""
    config = kubeconfig(server.url, user or None, **{"certificate-authority-data": b64(certs.cluster.pem())})
    return KubeClient.from_kubeconfig(config)


def node(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {}}, "status": {}}


# ---------------------------------------------------------------- credentials stay with the API server


def test_a_redirect_to_another_host_is_an_error_and_the_token_goes_nowhere(api: ApiServer, sink: Sink):
    api.routes["*"] = redirect(f"http://127.0.0.1:{sink.port}/api/v1/nodes")
    client = KubeClient.from_kubeconfig(kubeconfig(api.url))
    with pytest.raises(KubeApiError) as err:
        client.get(NODES)
    assert err.value.fatal
    assert str(err.value) == (
        f"HTTP 302: the API server redirects GET /api/v1/nodes to http://127.0.0.1:{sink.port}/api/v1/nodes; "
        f"kaito-aks follows no redirect (the credentials go to {api.url} only): point the kubeconfig at the API "
        "server itself"
    )
    assert sink.connections == 0
    assert sink.received == b""
    assert api.seen == [(NODES, f"Bearer {TOKEN}")]


def test_an_https_server_redirecting_to_http_gets_neither_token_nor_client_certificate_followed(
    certs: Certs, sink: Sink
):
    server = ApiServer(tls=certs.cluster_server, client_ca=certs.cluster)
    try:
        server.routes["*"] = redirect(f"http://127.0.0.1:{sink.port}/steal", 307)
        cert, key = certs.client
        client = pinned(
            server,
            certs,
            token=TOKEN,
            **{"client-certificate-data": b64(cert.read_bytes()), "client-key-data": b64(key.read_bytes())},
        )
        with pytest.raises(KubeApiError, match="HTTP 307: the API server redirects GET /api/v1/nodes to http://"):
            client.get(NODES)
        assert sink.connections == 0
        assert server.client_names == ["kaito-aks-user"]  # the certificate went to the API server only
    finally:
        server.stop()


def test_the_waits_follow_no_redirect_either(api: ApiServer, sink: Sink):
    api.routes["*"] = redirect(f"http://127.0.0.1:{sink.port}/")
    client = KubeClient.from_kubeconfig(kubeconfig(api.url))
    with pytest.raises(RuntimeError) as err:  # at once: retrying cannot help
        wait_for_models(client, [WS], 600, sleep=pytest.fail)
    assert str(err.value).startswith("HTTP 302: the API server redirects GET /apis/kaito.sh/v1beta1/namespaces/")
    assert sink.connections == 0


# ---------------------------------------------------------------- the kubeconfig's CA alone


def test_only_the_kubeconfigs_ca_is_trusted_when_it_names_one(certs: Certs, monkeypatch: pytest.MonkeyPatch):
    """The server's certificate is signed by a CA the machine's store trusts, not by the
    kubeconfig's: refused before a request (so before the token) is sent."""
    monkeypatch.setenv("SSL_CERT_FILE", str(certs.system.cert))
    server = ApiServer(tls=certs.system_server)
    try:
        server.routes["*"] = {"items": []}
        with pytest.raises(KubeApiError) as err:
            pinned(server, certs).get(NODES)
        assert err.value.fatal
        assert f"the API server at {server.url} is not trusted (" in str(err.value)
        assert "the kubeconfig's certificate-authority do not sign its certificate" in str(err.value)
        assert server.seen == []
        # with no CA in the kubeconfig, the machine's store decides, as kubectl does
        assert KubeClient.from_kubeconfig(kubeconfig(server.url)).get(NODES) == {"items": []}
        assert server.seen == [(NODES, f"Bearer {TOKEN}")]
    finally:
        server.stop()


def test_the_ca_may_be_a_file_relative_to_the_kubeconfig_and_a_client_certificate_is_presented(
    certs: Certs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    server = ApiServer(tls=certs.cluster_server, client_ca=certs.cluster)
    try:
        server.routes["*"] = {"items": [node("a")]}
        folder = tmp_path / "kube"
        folder.mkdir()
        (folder / "ca.crt").write_bytes(certs.cluster.cert.read_bytes())
        cert, key = certs.client
        (folder / "user.crt").write_bytes(cert.read_bytes())
        (folder / "user.key").write_bytes(key.read_bytes())
        user = {"client-certificate": "user.crt", "client-key": "user.key"}
        # the key is handed to ssl in memory (a memfd), never in a temp file
        monkeypatch.setattr(tempfile, "mkdtemp", lambda *a, **k: pytest.fail("a temp dir for the key"))
        (folder / "config").write_text(
            yaml.safe_dump(kubeconfig(server.url, user, **{"certificate-authority": "ca.crt"}))
        )
        assert KubeClient.from_kubeconfig(path=str(folder / "config")).get(NODES)["items"][0]["metadata"]["name"] == "a"
        assert server.client_names == ["kaito-aks-user"]
        assert server.seen == [(NODES, None)]
    finally:
        server.stop()


def test_insecure_skip_tls_verify_with_a_ca_is_refused_as_kubectl_refuses_it(certs: Certs):
    config = kubeconfig(
        "https://127.0.0.1:1",
        **{"certificate-authority-data": b64(certs.cluster.pem()), "insecure-skip-tls-verify": True},
    )
    with pytest.raises(KubeconfigError, match="insecure-skip-tls-verify is set with a certificate-authority"):
        KubeClient.from_kubeconfig(config)


def test_tls_to_a_plain_http_server_is_an_error(api: ApiServer):
    with pytest.raises(KubeApiError, match=r"^TLS with https://127\.0\.0\.1:\d+ failed"):
        KubeClient.from_kubeconfig(kubeconfig(api.url.replace("http://", "https://"))).get(NODES)


# ---------------------------------------------------------------- bounded size, one deadline


def test_an_answer_larger_than_the_cap_is_refused_without_holding_it(api: ApiServer):
    api.routes["*"] = huge(2 * MAX_RESPONSE_BYTES)
    client = KubeClient.from_kubeconfig(kubeconfig(api.url))
    tracemalloc.start()
    try:
        with pytest.raises(KubeApiError) as err:
            client.get(NODES)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert err.value.fatal
    assert (
        str(err.value)
        == "the API server's answer to GET /api/v1/nodes is larger than 32 MiB, which kaito-aks does not read"
    )
    assert peak < MAX_RESPONSE_BYTES * 1.25

    api.routes["*"] = huge(300 * 2**20, declare=True)  # says so, then sends nothing: not waited for
    with pytest.raises(KubeApiError, match="larger than 32 MiB"):
        client.get(NODES)


@pytest.mark.parametrize("headers_too", [False, True], ids=["body", "headers"])
def test_a_server_dripping_its_answer_is_cut_at_the_calls_deadline(api: ApiServer, headers_too: bool):
    api.routes["*"] = drip(seconds=30, headers_too=headers_too)  # a byte every 0.2 s, each read timeout met
    client = KubeClient.from_kubeconfig(kubeconfig(api.url))
    client.timeout_seconds = 1.0
    start = time.monotonic()
    with pytest.raises(KubeApiError, match=rf"^{api.url} did not answer GET /api/v1/nodes in full within 1s$"):
        client.get(NODES)
    assert time.monotonic() - start < 10  # not the 30 s the server would drip for


def test_a_wait_ends_at_its_own_limit_whatever_the_server_does(api: ApiServer):
    """One deadline per wait: every call ends by the wait's limit (here 2 s; a call's own is 30 s)."""
    api.routes["*"] = drip(seconds=40)
    props = {"watched": [WS.props()], "revision": "r", "timeoutSeconds": 2, "kubeconfig": kubeconfig(api.url)}
    start = time.monotonic()
    with pytest.raises(RuntimeError) as err:
        ModelReadyProvider().create(props)
    assert time.monotonic() - start < 15
    assert str(err.value).startswith("no usable answer from the API server (")
    assert str(err.value).endswith(
        "after 2s: is the cluster reachable, and is it its API server that answers (not a proxy or load balancer "
        "in front of it)?"
    )


def test_a_wait_that_times_out_says_what_the_cluster_last_said_not_that_time_ran_out(api: ApiServer):
    """Its last look comes at its limit: the calls of that look still get their answer."""
    pending = {"type": "InferenceReady", "status": "False", "reason": "Pending", "message": "loading the weights"}
    api.routes["*"] = {"metadata": {"name": "phi-0", "generation": 1}, "status": {"conditions": [pending]}}
    props = {"watched": [WS.props()], "revision": "r", "timeoutSeconds": 1.5, "kubeconfig": kubeconfig(api.url)}
    with pytest.raises(RuntimeError) as err:
        ModelReadyProvider().create(props)
    assert str(err.value) == (
        "Workspace default/phi-0 is not ready: InferenceReady=False (Pending: loading the weights) after 1.5s: "
        "kubectl describe workspace -n default phi-0"
    )


# ---------------------------------------------------------------- broken answers: one line, retried by the waits


@pytest.mark.parametrize("name", list(BROKEN))
def test_every_broken_answer_is_a_one_line_error(api: ApiServer, name: str):
    api.routes["*"] = BROKEN[name]
    with pytest.raises(KubeApiError) as err:
        KubeClient.from_kubeconfig(kubeconfig(api.url)).get(NODES)
    said = str(err.value)
    assert said.isprintable(), said  # one line, nothing raw
    assert not err.value.fatal  # the waits try again
    assert err.value.status in (0, 500, 503), said


def test_what_a_broken_answer_says_is_named(api: ApiServer):
    said = {}
    client = KubeClient.from_kubeconfig(kubeconfig(api.url))
    for name in ("html instead of JSON", "a JSON list", "a 500 that is not JSON", "a 503 Status", "not HTTP"):
        api.routes["*"] = BROKEN[name]
        with pytest.raises(KubeApiError) as err:
            client.get(NODES)
        said[name] = str(err.value).replace(api.url, "SERVER")
    assert said == {
        "html instead of JSON": "the API server's answer to GET /api/v1/nodes is not JSON (37 bytes, text/html)",
        "a JSON list": "the API server's answer to GET /api/v1/nodes is JSON but not an object",
        "a 500 that is not JSON": "HTTP 500: Internal Server Error",
        "a 503 Status": "HTTP 503: etcdserver: leader changed",
        "not HTTP": "SERVER broke off its answer to GET /api/v1/nodes (BadStatusLine)",
    }


def test_a_wait_rides_out_answers_that_are_not_json_and_5xx(api: ApiServer):
    answers = iter([BROKEN["html instead of JSON"], BROKEN["a 503 Status"], BROKEN["JSON cut short"]])
    ready = {
        "metadata": {"name": "phi-0", "generation": 1},
        "status": {"conditions": [{"type": "InferenceReady", "status": "True"}]},
    }

    def answer(handler: Any) -> None:
        next(answers, raw(200, json.dumps(ready).encode()))(handler)

    api.routes["*"] = answer
    slept: list[float] = []
    wait_for_models(KubeClient.from_kubeconfig(kubeconfig(api.url)), [WS], 600, sleep=slept.append)
    assert len(slept) == 3
    assert len(api.seen) == 4


def test_a_gpu_node_wait_rides_out_a_non_json_answer(api: ApiServer):
    """Before: a JSONDecodeError ended `pulumi up` at the first answer that was not JSON."""
    answers = iter([BROKEN["html instead of JSON"]])
    labelled = {"metadata": {"name": "a", "labels": {"nvidia.com/gpu.product": "A100", "nvidia.com/gpu.count": "1", "nvidia.com/gpu.memory": "81920"}},
                "status": {"conditions": [{"type": "Ready", "status": "True"}], "allocatable": {"nvidia.com/gpu": "1"}}}  # fmt: skip

    def answer(handler: Any) -> None:
        next(answers, raw(200, json.dumps({"items": [labelled]}).encode()))(handler)

    api.routes["*"] = answer
    found = wait_for_gpu_nodes(
        KubeClient.from_kubeconfig(kubeconfig(api.url)), {"pool": "a100"}, None, 600, sleep=lambda _: None
    )
    assert found["nodes"] == ["a"]


def test_one_connection_serves_many_calls_and_one_the_server_closed_is_opened_again(tls_api: ApiServer, certs: Certs):
    tls_api.routes["*"] = {"items": []}
    client = pinned(tls_api, certs)
    for _ in range(3):
        client.get(NODES)
    assert tls_api.accepted == 1
    tls_api.keep_alive = False  # it now closes each connection after its answer, unannounced
    for _ in range(3):
        assert client.get(NODES) == {"items": []}
    assert tls_api.accepted == 3  # the 4th call on the first, the 5th and 6th each retried on a new one
    assert len(tls_api.seen) == 6


# ---------------------------------------------------------------- the cluster's words, escaped


def test_the_clusters_words_reach_an_error_escaped(api: ApiServer):
    api.routes["*"] = raw(403, json.dumps({"kind": "Status", "message": f"nodes is forbidden {ESCAPES}"}).encode())
    with pytest.raises(KubeApiError) as err:
        KubeClient.from_kubeconfig(kubeconfig(api.url)).get(NODES)
    assert str(err.value) == r"HTTP 403: nodes is forbidden \x1b[31mRED\x1b[0m\x1b]0;pwned\x07\r\u202e"


def test_a_wait_escapes_kaitos_words_in_its_error(api: ApiServer):
    failing = {
        "type": "InferenceReady",
        "status": "False",
        "reason": "Failed",
        "message": f"boom{ESCAPES}\nsecond line",
    }
    api.routes["*"] = {"metadata": {"name": "phi-0", "generation": 1}, "status": {"conditions": [failing]}}
    clock = iter(range(0, 10_000, 30))
    with pytest.raises(RuntimeError) as err:
        wait_for_models(
            KubeClient.from_kubeconfig(kubeconfig(api.url)), [WS], 60, sleep=lambda _: None, clock=lambda: next(clock)
        )
    said = str(err.value)
    assert said.isprintable()  # no escape, no line break, no right-to-left override
    assert r"(Failed: boom\x1b[31mRED\x1b[0m" in said
    assert r"\nsecond line)" in said


# ---------------------------------------------------------------- kubeconfigs as kubectl reads them


def plugin(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "credential-plugin"
    script.write_text(f"#!{sys.executable}\nimport json, os, sys, time\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_an_exec_plugin_gets_the_cluster_info_and_is_run_again_before_its_token_expires(api: ApiServer, tmp_path: Path):
    """kubelogin's kubeconfig on an Entra ID AKS cluster: an exec plugin (v1beta1) whose token
    expires; provideClusterInfo hands it the cluster (server, CA, its exec extension)."""
    runs = tmp_path / "runs"
    script = plugin(
        tmp_path,
        "info = json.loads(os.environ['KUBERNETES_EXEC_INFO'])\n"
        "open(os.environ['RUNS'], 'a').write(json.dumps(info) + '\\n')\n"
        "soon = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(time.time() + 5))\n"
        "print(json.dumps({'apiVersion': info['apiVersion'], 'kind': 'ExecCredential',"
        " 'status': {'token': 'entra-token', 'expirationTimestamp': soon}}))",
    )
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": str(script),
            "args": ["get-token", "--login", "azurecli"],
            "env": [{"name": "RUNS", "value": str(runs)}],
            "provideClusterInfo": True,
            "interactiveMode": "IfAvailable",
        }
    }
    extension = {"name": "client.authentication.k8s.io/exec", "extension": {"audience": "6dae42f8"}}
    client = KubeClient.from_kubeconfig(kubeconfig(api.url, user, extensions=[extension]))
    api.routes["*"] = {"items": []}
    client.get(NODES)
    infos = [json.loads(line) for line in runs.read_text().splitlines()]
    assert len(infos) == 2  # its token expires within the margin: fetched again before the call
    assert infos[0]["spec"] == {
        "interactive": False,
        "cluster": {"server": api.url, "config": {"audience": "6dae42f8"}},
    }
    assert api.seen == [(NODES, "Bearer entra-token")]


def test_a_plugin_that_needs_a_terminal_or_an_unknown_api_version_is_said(tmp_path: Path):
    script = plugin(tmp_path, "print('{}')")
    for spec, said in (
        ({"apiVersion": "client.authentication.k8s.io/v1", "interactiveMode": "Always"}, "needs a terminal"),
        (
            {"apiVersion": "client.authentication.k8s.io/v1alpha1"},
            "exec apiVersion 'client.authentication.k8s.io/v1alpha1'",
        ),
        ({"apiVersion": "client.authentication.k8s.io/v1"}, "did not print an ExecCredential"),
    ):
        with pytest.raises(KubeconfigError, match=said):
            KubeClient.from_kubeconfig(kubeconfig("http://127.0.0.1:9", {"exec": {**spec, "command": str(script)}}))


def test_a_legacy_auth_provider_is_refused_by_name():
    user = {"auth-provider": {"name": "azure", "config": {"access-token": "x"}}}
    with pytest.raises(
        KubeconfigError, match="logs in with the auth-provider 'azure', which kubectl no longer supports"
    ):
        KubeClient.from_kubeconfig(kubeconfig("http://127.0.0.1:9", user))


def test_impersonation_and_tls_server_name_are_honoured(api: ApiServer, certs: Certs):
    """`as`/`as-groups` become Impersonate-* headers; tls-server-name is the name checked."""
    seen: list[dict[str, Any]] = []

    def answer(handler: Any) -> None:
        seen.append({k: handler.headers.get_all(k) for k in ("Impersonate-User", "Impersonate-Group")})
        raw(200, b'{"items": []}')(handler)

    api.routes["*"] = answer
    user = {"token": TOKEN, "as": "alice", "as-groups": ["team-a", "team-b"]}
    KubeClient.from_kubeconfig(kubeconfig(api.url, user)).get(NODES)
    assert seen == [{"Impersonate-User": ["alice"], "Impersonate-Group": ["team-a", "team-b"]}]

    server = ApiServer(tls=certs.cluster_server)  # its certificate names 127.0.0.1 and localhost
    try:
        server.routes["*"] = {"items": []}
        wrong = kubeconfig(
            server.url, **{"certificate-authority-data": b64(certs.cluster.pem()), "tls-server-name": "kube.example"}
        )
        with pytest.raises(KubeApiError, match="is not trusted"):
            KubeClient.from_kubeconfig(wrong).get(NODES)
        right = kubeconfig(
            server.url, **{"certificate-authority-data": b64(certs.cluster.pem()), "tls-server-name": "localhost"}
        )
        assert KubeClient.from_kubeconfig(right).get(NODES) == {"items": []}
    finally:
        server.stop()


def test_malformed_kubeconfigs_are_errors_that_quote_nothing_of_them():
    for config, said in (
        ({"clusters": 5}, "the kubeconfig's clusters is not a list"),
        ({"clusters": [{"cluster": {}}]}, "an entry of the kubeconfig's clusters has no name"),
        (
            {**kubeconfig("ftp://sekret@h"), "current-context": "hostile"},
            "its server is not an http(s)://host[:port] address",
        ),
        (kubeconfig("http://127.0.0.1:9", {"token": 5}), "the kubeconfig's user 'u': token is not text"),
        (kubeconfig("http://127.0.0.1:9", {"token": "sekret\r\nX-Injected: 1"}), "its token holds a line break"),
        (kubeconfig("http://127.0.0.1:9", {"token": "sekret€"}), "its token holds characters an HTTP header cannot"),
        (
            kubeconfig("http://127.0.0.1:9", {"client-certificate-data": "c2VrcmV0"}),
            "a client certificate without its key",
        ),
        (
            kubeconfig("https://127.0.0.1:9", **{"certificate-authority-data": "sekret!"}),
            "certificate-authority-data is not base64",
        ),
        (
            kubeconfig("https://127.0.0.1:9", **{"certificate-authority-data": b64("sekret")}),
            "holds no valid certificate",
        ),
    ):
        with pytest.raises(
            KubeconfigError, match=said.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
        ) as err:
            KubeClient.from_kubeconfig(config)
        assert "sekret" not in str(err.value)


def test_an_http_proxy_is_used_through_connect_and_loopback_is_never_proxied(
    tls_api: ApiServer, certs: Certs, monkeypatch: pytest.MonkeyPatch, sink: Sink
):
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{sink.port}")
    tls_api.routes["*"] = {"items": []}
    assert pinned(tls_api, certs).get(NODES) == {"items": []}  # 127.0.0.1: straight to the API server
    assert sink.connections == 0
    config = kubeconfig(
        tls_api.url,
        **{"certificate-authority-data": b64(certs.cluster.pem()), "proxy-url": f"http://u:p@127.0.0.1:{sink.port}"},
    )
    with pytest.raises(KubeApiError, match=r"^TLS with"):  # the sink says 200 to CONNECT, then speaks no TLS
        KubeClient.from_kubeconfig(config).get(NODES)
    assert sink.received.startswith(f"CONNECT 127.0.0.1:{tls_api.server_port} HTTP/1.1\r\n".encode())
    assert b"Proxy-Authorization: Basic dTpw\r\n" in sink.received
    assert TOKEN.encode() not in sink.received  # the token travels inside the tunnel's TLS only
