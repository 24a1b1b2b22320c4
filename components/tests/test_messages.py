"""What the library's errors show of a value (review B6 and polish 1-2): never a secret's value,
never an unbounded value or a raw control character, and no Python-isms (None, reprs of sets,
dates or Outputs, YAML advice to a Python program)."""

from __future__ import annotations

import datetime
from collections.abc import Callable

import pulumi
import pytest
from pulumi.errors import InputPropertiesError

from kaito_aks import (
    AksClusterArgs,
    InvalidArgsError,
    KaitoModel,
    KaitoModelArgs,
    KubeconfigCluster,
    KubeconfigClusterArgs,
    LabelSelectorArgs,
)
from kaito_aks.problems import Key, Problem, format_path
from kaito_aks.provider import KaitoAksProvider
from kaito_aks.rag.spec import InferenceServiceArgs, RagEngineArgs
from kaito_aks.testing import ProgramMocks, RecordingMonitor, run
from kaito_aks.validation import check_instance
from test_components import kubeconfig_cluster

SECRET = "TOPSECRET_hf_abc"
QUIET = {"wait_for_gpu_nodes": False, "wait_for_ready": False}


def refused(program: Callable[[], object]) -> str:
    monitor = RecordingMonitor(ProgramMocks())
    with pytest.raises(InvalidArgsError) as err:
        run(program, monitor=monitor)
    assert monitor.registrations == []
    return str(err.value)


def model(**kw: object) -> KaitoModelArgs:
    given: dict[str, object] = {"kaito_version": "0.8.1", "model": "phi-4-mini-instruct", **QUIET, **kw}
    return KaitoModelArgs(**given)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "secret",
    [SECRET.encode(), 12345, {"token": SECRET}, [SECRET], 1e300, True],
)
def test_a_secret_of_the_wrong_type_is_named_by_its_kind_never_shown(secret: object):
    for program in (
        lambda: KubeconfigCluster("c", KubeconfigClusterArgs(kubeconfig=secret)),  # type: ignore[arg-type]
        lambda: KaitoModel("m", model(hf_token=secret)),
    ):
        message = refused(program)
        assert SECRET not in message
        assert "12345" not in message
        assert "1e+300" not in message
    assert "args.kubeconfig: must be text, not bytes" in refused(
        lambda: KubeconfigCluster("c", KubeconfigClusterArgs(kubeconfig=SECRET.encode()))  # type: ignore[arg-type]
    )


def test_a_nested_secret_is_not_shown_either():
    engine = RagEngineArgs(
        kaito_version="0.8.1",
        name="rag",
        inference_service=InferenceServiceArgs(
            url="http://x/v1/chat/completions", context_window_size=4096, access_token=SECRET.encode()
        ),  # type: ignore[arg-type]
    )
    problems = check_instance(engine)
    assert [p.text() for p in problems] == ["inference_service.access_token: must be text, not bytes"]


def test_the_providers_construct_never_echoes_a_secret():
    provider = KaitoAksProvider()
    inputs = {"kaitoVersion": "0.8.1", "model": "phi-4-mini-instruct", "hfToken": 12345.0, "waitForReady": False}
    with pytest.raises(InputPropertiesError) as err:
        run(lambda: provider.construct("m", "kaito-aks:index:KaitoModel", inputs, pulumi.ResourceOptions()))
    assert "12345" not in str(err.value)
    assert {"property_path": "hfToken", "reason": "must be text, not a number"} in (err.value.errors or [])


def test_the_repr_of_args_never_shows_a_secret():
    shown = repr(model(hf_token=SECRET, kubeconfig=SECRET))
    assert SECRET not in shown
    assert "hf_token='[secret]'" not in shown
    assert "hf_token=[secret]" in shown
    assert "kubeconfig=[secret]" in shown
    assert "model='phi-4-mini-instruct'" in shown
    assert "hf_token=None" in repr(model())
    nested = RagEngineArgs(
        kaito_version="0.8.1",
        name="rag",
        kubeconfig=SECRET,
        inference_service=InferenceServiceArgs(
            url="http://x/v1/chat/completions", context_window_size=4096, access_token=SECRET
        ),
    )
    assert SECRET not in repr(nested)
    assert SECRET not in repr(KubeconfigClusterArgs(kubeconfig=SECRET))


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"wait_for_ready": None}, "args.wait_for_ready: must be true or false, not null"),
        ({"name": datetime.date(2001, 12, 14)}, "args.name: must be text, not 2001-12-14"),
        # a Python program is told the type, not YAML's quoting rules
        ({"hf_token": "x", "name": 123}, "args.name: must be text, not 123"),
        (
            {"label_selector": LabelSelectorArgs(match_labels={"a": 1})},  # type: ignore[dict-item]
            "args.label_selector.match_labels.a: must be text, not 1",
        ),
        ({"name": pulumi.Output.from_input("phi")}, "args.name: must be known at preview; it cannot come from another"),
        ({"adapters": {"b", "a"}}, "args.adapters: must be a list of object, not ['a', 'b']"),
    ],
)
def test_values_are_shown_in_the_words_of_the_config_not_pythons(args: dict[str, object], expected: str):
    message = refused(lambda: KaitoModel("m", model(**args)))
    assert expected in message
    assert "YAML" not in message
    assert "<pulumi" not in message
    assert "None" not in message


@pytest.mark.parametrize(
    "args",
    [{"name": "n" * 1_000_000}, {"model": "m" * 1_000_000}, {"image": "i" * 1_000_000, "model": None}],
)
def test_a_huge_value_is_cut_in_the_message(args: dict[str, object]):
    message = refused(lambda: KaitoModel("m", model(**args)))
    assert len(message) < 2000, message[:300]
    assert "(1000000 characters)" in message


def test_an_image_reference_is_bounded_as_registries_bound_it():
    name, tag = "a" * 256, "t" * 129
    # distribution/reference's words (KAITO's parser): NameTotalLengthMax 255, a tag of at most 128
    assert "repository name must not be more than 255 characters" in refused(
        lambda: KaitoModel("m", model(model=None, compute="cpu", image=name))
    )
    assert "is not an image reference: invalid reference format" in refused(
        lambda: KaitoModel("m", model(model=None, compute="cpu", image=f"ghcr.io/x/y:{tag}"))
    )

    def fits() -> None:
        cluster = kubeconfig_cluster()
        image = f"r.io/{'a' * 250}:{'t' * 128}"
        KaitoModel(
            "m", model(model=None, compute="cpu", image=image), opts=pulumi.ResourceOptions(provider=cluster.provider)
        )

    run(fits)


def test_control_characters_are_escaped_in_paths_and_messages():
    problem = Problem(("tags", Key("\x1b[31mRED\x1b[0m")), "bad \x1b[2J value \u202e")
    assert problem.text() == 'tags."\\x1b[31mRED\\x1b[0m": bad \\x1b[2J value \\u202e'
    assert format_path(("tags", Key("k" * 500))) == 'tags."' + "k" * 60 + '..."'
    assert "args.name: contains control characters" in refused(lambda: KaitoModel("m", model(name="a\x1b[31mb")))
    message = refused(lambda: KaitoModel("m", model(name="a\u202eb")))
    assert "\u202e" not in message
    assert "'a\\u202eb' is not a DNS-1123 label" in message
    tags = AksClusterArgs(resource_group="rg", name="aks", tags={"\x1b[31m": "x"})
    assert all("\x1b" not in p.text() for p in check_instance(tags))
