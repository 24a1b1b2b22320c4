"""KAITO's RAGEngine operator and a RAGEngine, built as a user would (`from kaito_aks import
...`, `kaito_aks.testing.run`): the chart values against the ragengine chart's values.yaml, the
RAGEngine against KAITO's CRD at each release, each rule of KAITO's ragengine webhook (and what
KAITO silently mishandles) refused by arg before anything registers, the wiring to a model's
endpoint, the readiness wait and the secrets."""

from __future__ import annotations

from typing import Any

import pytest

import upstream_facts
from kaito_aks import InvalidArgsError, RagEngineOperator, RagEngineOperatorArgs
from kaito_aks.kaito.go_url import parse_request_uri
from kaito_aks.testing import ProgramMocks, RecordingMonitor, run
from kube_schema import unknown_value_paths

RELEASE = "kubernetes:helm.sh/v3:Release"
VERSIONS = ("0.8.0", "0.8.1", "0.12.0")


def refused(program: Any) -> str:
    """The InvalidArgsError a program raises, after checking nothing was registered."""
    monitor = RecordingMonitor(ProgramMocks())
    with pytest.raises(InvalidArgsError) as err:
        run(program, monitor=monitor)
    assert monitor.registrations == [], "resources were registered before the error"
    return str(err.value)


# Go 1.26's url.ParseRequestURI on each (its verdict, recorded with the Go toolchain KAITO 0.12
# is built with): the webhook's "URL input error" passes or fails the same text.
GO_PARSE_REQUEST_URI = [
    ("http://phi.default.svc.cluster.local/v1/chat/completions", True),
    ("https://api.openai.com/v1/embeddings", True),
    ("/v1/chat/completions", True),
    ("localhost:5000/v1/chat/completions", True),  # scheme "localhost", opaque
    ("mailto:x", True),
    ("*", True),
    ("http://u:p@host/x", True),
    ("http://[::1]:8080/x", True),
    ("http://[fe80::1%25en0]/", True),
    ("http://h%C3%A9.example/", True),
    ("http://x/a b", True),
    ("http://x?q=1", True),
    ("http://x#frag", False),  # invalid character "#" in host name
    ("", False),  # empty url
    ("v1/chat/completions", False),  # invalid URI for request
    ("phi.default.svc", False),  # invalid URI for request
    ("http://x:80a/", False),  # invalid port ":80a" after host
    ("http://x:8080:90/", False),  # invalid port ":8080:90" after host
    ("http://[::1/x", False),  # missing ']' in host
    ("http://[127.0.0.1]/", False),  # invalid IP-literal
    ("http://a[b]/", False),  # invalid IP-literal
    ("http://h%41/", False),  # invalid URL escape "%41"
    ("http://h/%zz", False),  # invalid URL escape "%zz"
    ("https://a b/x", False),  # invalid character " " in host name
    ("http://{x}/", False),  # invalid character "{" in host name
    ("http://x\\y/", False),  # invalid character "\\" in host name
    ("1http://x", False),  # invalid URI for request
    (":foo", False),  # missing protocol scheme
    ("http://x/\x01", False),  # net/url: invalid control character in URL
    ("http://u p@host/", False),  # net/url: invalid userinfo
    ("http://\u00fc@host/", False),  # net/url: invalid userinfo
    ("http://[]/", False),  # invalid host: ParseAddr(""): unable to parse IP
]


@pytest.mark.parametrize(("url", "go_accepts"), GO_PARSE_REQUEST_URI)
def test_urls_pass_or_fail_as_go_parses_them_in_kaitos_webhook(url: str, go_accepts: bool):
    assert (parse_request_uri(url) is None) is go_accepts, parse_request_uri(url)


# ---------------------------------------------------------------- the operator


@pytest.mark.parametrize("version", VERSIONS)
def test_the_operator_is_the_pinned_ragengine_chart_in_a_namespace_of_its_own(version: str):
    values = {"logging": {"level": "info"}, "nodeSelector": {"agentpool": "system"}}
    ev = run(lambda: RagEngineOperator("rag-op", RagEngineOperatorArgs(version=version, values=values)))
    release = ev.named("rag-op", RELEASE).inputs
    assert (release["chart"], release["version"], release["name"]) == ("ragengine", version, "kaito-ragengine")
    assert release["repositoryOpts"] == {"repo": "https://kaito-project.github.io/kaito/charts/kaito"}
    # the workspace chart makes ConfigMap kaito-logging-config in kaito-workspace: not there
    assert release["namespace"] == "kaito-ragengine"
    assert release["createNamespace"] is True
    assert release["atomic"] is True  # ready only once the fail-closed webhook serves
    chart_values = upstream_facts.chart_values("kaito", version, "ragengine")
    assert unknown_value_paths(release["values"], chart_values) == []
    assert release["values"] == values


def test_the_operator_refuses_values_the_chart_lacks_or_mishandles():
    message = refused(
        lambda: RagEngineOperator(
            "rag-op",
            RagEngineOperatorArgs(
                version="0.12.0", values={"clusterName": "aks", "replicaCount": 2, "cloudProviderName": "aws"}
            ),
        )
    )
    assert "args.values.clusterName: not a value of the KAITO 0.12.0 ragengine chart" in message
    assert "args.values.replicaCount: must be 1, not 2: the chart starts the RAGEngine controller without leader" in (
        message
    )
    assert "args.values.cloudProviderName: must be azure, not 'aws'" in message
    message = refused(lambda: RagEngineOperator("rag-op", RagEngineOperatorArgs(version="0.9.4")))
    assert "args.version: KAITO 0.9.4 is not supported; use one of: 0.8.0, 0.8.1, 0.12.0" in message
