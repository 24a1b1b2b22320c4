"""Generated misuses of the library's public API, under its own mocks (issue 28): each exported
component with its args (as an instance, or a mapping of them), `deploy_models`, `pool_budget`,
`check_model`, the waits. Every answer must be clean: it works, or it is an InvalidArgsError
whose every problem has a path, with nothing of the refusing component registered; never a
traceback, never a hang, never a secret in the message. Seeded and bounded (FUZZ_SEED,
FUZZ_API_CASES), so CI runs the same cases every time."""

from __future__ import annotations

import contextlib
import math
import os
import random
import re
import resource
import signal
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pulumi
import pytest

import kaito_aks
from kaito_aks import (
    ClusterAccess,
    InvalidArgsError,
    KaitoKind,
    KaitoModelArgs,
    KubeconfigCluster,
    KubeconfigClusterArgs,
    NodeGroup,
    RagEngineArgs,
    check_model,
    deploy_models,
    pool_budget,
)
from kaito_aks.rag.component import check_rag_engine
from kaito_aks.schema import fields, is_args_class, plain
from kaito_aks.testing import MOCK_KUBECONFIG, ProgramMocks, RecordingMonitor, cluster_id, run
from kaito_aks.vocabulary import GpuDemand
from kaito_aks.waits.gpu_nodes import GpuNodesReady
from kaito_aks.waits.model_ready import ModelReady, Watched

SEED = int(os.environ.get("FUZZ_SEED", "28"))
CASES = int(os.environ.get("FUZZ_API_CASES", "240"))
HANG_SECONDS = 20
SECRET = "hf_FUZZ_api_not_a_real_token_28"
KUBECONFIG = MOCK_KUBECONFIG.format(cluster="dev")
A10 = "Standard_NV36ads_A10_v5"
PROBLEM_LINE = re.compile(r"^  - (args|opts)(\.|\[|:| )")
ADDRESSED = "problem(s) with its args:"


def deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels):
        value = {"a": value}
    return value


# What a mistaken caller gives: wrong types, out-of-range and huge values, control characters,
# values known only at deploy time, deep and free-form nesting, secrets where text is echoed.
BAD_VALUES: list[Callable[[], Any]] = [
    lambda: None,
    lambda: True,
    lambda: math.nan,
    lambda: math.inf,
    lambda: -math.inf,
    lambda: -1,
    lambda: 0,
    lambda: 2**63,
    lambda: 1e308,
    lambda: "",
    lambda: "x" * 200_000,
    lambda: "\x1b[31mred\x00\r\u202e",
    lambda: b"bytes",
    lambda: {1, 2},
    lambda: pulumi.Output.from_input("later"),
    lambda: deep(45),
    lambda: deep(500),
    lambda: deep(5000),
    lambda: [object(), None, 3],
    lambda: {"unknown": 1, "preferred_nodes": ["n"]},
    lambda: "a/" * 2500,
]
# A secret arg given wrongly: its value must never be shown back.
BAD_SECRETS: list[Callable[[], Any]] = [
    lambda: SECRET + "\x00",
    lambda: {SECRET: 1},
    lambda: [SECRET],
    lambda: SECRET * 10_000,
    lambda: SECRET.encode(),
    lambda: "",
]


def base_kwargs() -> dict[str, dict[str, Any]]:
    """One valid call's args per component, as keyword arguments."""
    group = {"name": "gpu", "vm_size": A10, "labels": {"nvidia.com/gpu.present": "true"}, "gpu_driver": "aks"}
    tuning = {
        "method": "qlora",
        "input": {"urls": ["https://example.com/data.parquet"]},
        "output": {"image": "registry.example.com/adapters/phi:1", "image_push_secret": "push"},
    }
    return {
        "AksCluster": {"resource_group": "rg", "name": "aks", "location": "eastus2"},
        "GpuNodePool": {"cluster_name": "aks", "resource_group_name": "rg", "vm_size": A10, "name": "gpu"},
        "WorkloadIdentity": {
            "resource_group_name": "rg",
            "issuer_url": "https://oidc/",
            "namespace": "karpenter",
            "service_account": "karpenter-sa",
            "roles": [{"role": "Network Contributor", "scope": cluster_id("rg", "aks")}],
        },
        "GpuProvisioner": {
            "cluster_id": cluster_id("rg", "aks"),
            "location": "eastus2",
            "node_resource_group": "MC_rg",
            "oidc_issuer_url": "https://oidc/",
        },
        "KubeconfigCluster": {"kubeconfig": KUBECONFIG, "context": "dev"},
        "GpuOperator": {"node_groups": [group]},
        "KaitoOperator": {"version": "0.12.0", "node_groups": [group], "gpu_discovery": "external"},
        "KaitoModel": {
            "kaito_version": "0.8.1",
            "model": "llama-3.1-8b-instruct",
            "hf_token": SECRET,
            "node_groups": [group],
            "config": {"vllm": {"max-model-len": 4096}},
        },
        "KaitoModel/tuning": {
            "kaito_version": "0.12.0",
            "model": "phi-4-mini-instruct",
            "node_provisioning": "auto",
            "instance_type": "Standard_NC24ads_A100_v4",
            "tuning": tuning,
        },
        "RagEngineOperator": {"version": "0.12.0"},
        "RagEngine": {
            "kaito_version": "0.12.0",
            "inference_service": {
                "url": "http://phi.default.svc.cluster.local/v1/chat/completions",
                "context_window_size": 4096,
            },
            "guardrails": {"policy": {"rules": []}},
            "storage": {"persistent_volume_claim": "pvc", "mount_path": "/mnt/data"},
        },
    }


def _args_class(component: str) -> type:
    return getattr(kaito_aks, f"{component.split('/')[0]}Args")


def _nested_mapping(cls: type, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The args with every nested args value given as a mapping (as a YAML program gives them)."""
    return {k: (dict(v) if isinstance(v, dict) else v) for k, v in kwargs.items()}


def mutate(rng: random.Random, component: str, kwargs: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """1-3 mistakes in a component's args; what they were, for the report."""
    cls = _args_class(component)
    known = fields(cls)
    done: list[str] = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        kind = rng.random()
        if kind < 0.65:
            name = rng.choice(sorted(known))
            kwargs[name] = rng.choice(BAD_SECRETS if known[name].secret else BAD_VALUES)()
            done.append(f"{name}=bad")
        elif kind < 0.8:  # an args class given as a mapping, one or more levels deep, with a wrong value inside
            nested = [n for n, f in known.items() if is_args_class(plain(f.type))]
            if nested:
                name = rng.choice(nested)
                inner = fields(plain(known[name].type))
                value = dict(kwargs.get(name) or {}) if isinstance(kwargs.get(name), dict) else {}
                value[rng.choice(sorted(inner))] = rng.choice(BAD_VALUES)()
                kwargs[name] = value
                done.append(f"{name}.*=bad")
        elif kind < 0.9:  # an unknown or retired keyword
            word = rng.choice([*known, "preferred_nodes", "replica", "instance", "count"])
            kwargs[word[:-1] + "x" if rng.random() < 0.5 else word] = rng.choice(BAD_VALUES)()
            done.append("unknown keyword")
        else:  # a list whose entries are of the wrong type
            lists = [n for n, f in known.items() if "list" in str(f.type)]
            if lists:
                name = rng.choice(lists)
                kwargs[name] = [rng.choice(BAD_VALUES)() for _ in range(3)]
                done.append(f"{name}=[bad]")
    return kwargs, ", ".join(done)


@dataclass(frozen=True)
class Case:
    label: str
    program: Callable[[], None]
    owns: tuple[str, ...]  # what the refusing call may not have registered: type prefixes, or name= prefixes


def _opts() -> pulumi.ResourceOptions:
    cluster = KubeconfigCluster("cluster", KubeconfigClusterArgs(kubeconfig=KUBECONFIG, context="dev"))
    return pulumi.ResourceOptions(providers=[cluster.provider])


def component_case(rng: random.Random, n: int) -> Case:
    bases = base_kwargs()
    component = rng.choice(sorted(bases))
    kwargs, done = mutate(rng, component, dict(bases[component]))
    kind = component.split("/")[0]
    as_mapping = rng.random() < 0.3

    def program() -> None:
        cls, make = _args_class(component), getattr(kaito_aks, kind)
        args = _nested_mapping(cls, kwargs) if as_mapping else cls(**kwargs)
        make(f"fuzz-{n}", args, opts=_opts())

    return Case(f"{n}:{component}({'mapping' if as_mapping else 'args'}): {done}", program, (f"name=fuzz-{n}",))


def _model(**kw: Any) -> KaitoModelArgs:
    return KaitoModelArgs(kaito_version="0.8.1", model="phi-4-mini-instruct", **kw)


def function_case(rng: random.Random, n: int) -> Case:
    """deploy_models, pool_budget, check_model and the waits, given the wrong shapes."""
    bad = rng.choice(BAD_VALUES)
    group = NodeGroup(name="gpu", vm_size=A10, gpu_driver="aks", labels={"nvidia.com/gpu.present": "true"})
    access = ClusterAccess(kubeconfig=KUBECONFIG)
    choice = rng.randrange(8)
    if choice == 0:
        models: Any = rng.choice(
            [
                [_model()],
                [("a", _model())],
                [("a", _model()), ("a", _model())],
                bad(),
                [bad()],
                [("a", bad())],
                ("a", _model()),
            ]
        )
        return Case(
            f"{n}:deploy_models", lambda: deploy_models("models", models, opts=_opts()), ("kaito-aks:index:KaitoModel",)
        )
    if choice == 1:
        given: list[Any] = [[("a", _model(node_groups=[group]))], [group], ()]
        given[rng.randrange(3)] = bad()
        return Case(f"{n}:pool_budget", lambda: _discard(pool_budget(*given)), ())
    if choice == 2:
        args = rng.choice(
            [bad(), {"kaito_version": bad()}, {"kaito_version": "0.8.1", "model": bad(), "config": bad()}]
        )
        return Case(f"{n}:check_model", lambda: _problems_have_paths(check_model(args, "m")[1]), ())
    if choice == 3:
        args = rng.choice([bad(), {"kaito_version": "0.12.0", "compute": bad()}, {"kaito_version": bad()}])
        return Case(f"{n}:check_rag_engine", lambda: _problems_have_paths(check_rag_engine(args, "r")[1]), ())
    waits = {
        4: (
            "KaitoReady",
            lambda kw: kaito_aks.KaitoReady("w", **kw),
            {
                "access": access,
                "kinds": [KaitoKind("workspaces", "v1beta1")],
                "require_webhook": True,
                "timeout_minutes": 30,
            },
        ),
        5: (
            "GpuNodesReady",
            lambda kw: GpuNodesReady("w", **kw),
            {
                "access": access,
                "selector": {"agentpool": "gpu"},
                "demand": GpuDemand("phi", 1, 7.0, "0.8"),
                "workspaces": ["phi-0"],
                "timeout_minutes": 20,
            },
        ),
        6: (
            "ModelReady",
            lambda kw: ModelReady("w", **kw),
            {
                "access": access,
                "watched": [Watched("Workspace", "kaito.sh/v1beta1", "default", "phi-0", "InferenceReady")],
                "revision": "r1",
                "timeout_minutes": 30,
            },
        ),
        7: (
            "KaitoReady",
            lambda kw: kaito_aks.KaitoReady("w", **kw),
            {"access": access, "kinds": [KaitoKind("workspaces", "v1beta1")], "require_webhook": True},
        ),
    }
    name, make, kw = waits[choice]
    kw = dict(kw)
    kw[rng.choice(sorted(kw))] = bad()
    return Case(f"{n}:{name}", lambda: make(kw), (f"pulumi-python:dynamic/kaito-aks:{name}",))


def _discard(_: object) -> None:
    """A function's result: only whether it raised matters here."""


def _problems_have_paths(problems: list[Any]) -> None:
    """check_model never raises: its problems are the answer, each a Problem that renders (at its
    path; () is the args as a whole), never showing the secret."""
    for problem in problems:
        text = problem.text()
        if not problem.message or SECRET in text:
            raise AssertionError(f"an empty or leaking problem: {text[:200]}")


def cases() -> list[Case]:
    rng = random.Random(SEED)
    return [component_case(rng, n) if rng.random() < 0.75 else function_case(rng, n) for n in range(CASES)]


@contextlib.contextmanager
def hang_guard(seconds: int) -> Iterator[None]:
    def stop(*_: object) -> None:
        raise TimeoutError(f"no answer after {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def judge(case: Case, respond: Callable[[Case], tuple[BaseException | None, list[str]]] | None = None) -> list[str]:
    """What is wrong with the answer to one case (empty: it was clean)."""
    error, registered = (respond or answer)(case)
    if error is None:
        return []
    message = str(error)
    deployed = isinstance(error, ValueError) and ADDRESSED in message  # raised inside an Output: Pulumi wraps it
    if not isinstance(error, InvalidArgsError) and not deployed:
        where = traceback.extract_tb(error.__traceback__)[-1] if error.__traceback__ else None
        at = f" at {where.filename.split('/components/')[-1]}:{where.lineno}" if where else ""
        return [f"{case.label}: {type(error).__name__}{at}: {message[:300]}"]
    problems: list[str] = []
    if SECRET in message:
        problems.append(f"{case.label}: the message shows the secret")
    message = message[message.index(ADDRESSED) :] if deployed else message
    lines = [
        "  - " + line.split("- ", 1)[1] if line.strip().startswith("- ") else line for line in message.splitlines()[1:]
    ]
    if not lines or any(not PROBLEM_LINE.match(line) for line in lines):
        problems.append(
            f"{case.label}: a problem without a path: {[ln for ln in lines if not PROBLEM_LINE.match(ln)][:1] or lines[:1]}"
        )
    made = [t for t in registered if any(t.startswith(own) for own in case.owns)]
    if made:
        problems.append(f"{case.label}: refused after registering {made[:3]}")
    return problems


def answer(case: Case) -> tuple[BaseException | None, list[str]]:
    monitor = RecordingMonitor(ProgramMocks())
    try:
        with hang_guard(HANG_SECONDS):
            run(case.program, monitor=monitor)
    except BaseException as err:
        if isinstance(err, KeyboardInterrupt):
            raise
        return err, [*(r.type for r in monitor.registrations), *(f"name={r.name}" for r in monitor.registrations)]
    return None, [r.type for r in monitor.registrations]


def test_every_misuse_of_the_api_gets_a_clean_answer() -> None:
    memory_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    problems = [p for case in cases() for p in judge(case)]
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - memory_before) / 1024
    assert not problems, f"{len(problems)} unclean answers:\n" + "\n".join(problems[:20])
    assert grown_mib < 500, f"memory grew {grown_mib:.0f} MiB over the cases"


class PathlessError(InvalidArgsError):
    """A refusal whose line names no arg (what the judge must catch)."""

    def __str__(self) -> str:
        return "KaitoModel 'm': 1 problem(s) with its args:\n  - something went wrong"


def test_the_judge_catches_a_traceback_a_leak_a_pathless_line_and_a_late_refusal() -> None:
    def case(label: str) -> Case:
        return Case(label, lambda: None, ("kaito-aks:index:KaitoModel",))

    answers = {
        "a": (AttributeError("'dict' object has no attribute 'urls'"), []),
        "b": (InvalidArgsError("KaitoModel", "m", [kaito_aks.Problem(("hf_token",), f"{SECRET} is wrong")]), []),
        "c": (PathlessError("KaitoModel", "m", []), []),
        "d": (InvalidArgsError("KaitoModel", "m", [kaito_aks.Problem(("x",), "no")]), ["kaito-aks:index:KaitoModel"]),
        "e": (None, ["kaito-aks:index:KaitoModel"]),
    }
    found = {label: judge(case(label), lambda c: answers[c.label]) for label in answers}
    assert "AttributeError" in found["a"][0]
    assert "shows the secret" in found["b"][0]
    assert "without a path" in found["c"][0]
    assert "after registering" in found["d"][0]
    assert found["e"] == []


# ---------------------------------------------------------------- the classes the fuzz found, every time


@pytest.mark.parametrize(
    "program",
    [
        pytest.param(
            lambda: KubeconfigCluster("c", KubeconfigClusterArgs(path="a" * 5000)), id="kubeconfig-path-too-long"
        ),
        pytest.param(
            lambda: kaito_aks.KaitoOperator(
                "k", kaito_aks.KaitoOperatorArgs(version="0.8.1", values={"affinity": deep(500)}), opts=_opts()
            ),
            id="chart-values-500-deep",
        ),
        pytest.param(
            lambda: kaito_aks.RagEngine(
                "r", RagEngineArgs(kaito_version="0.12.0", guardrails={"policy": deep(500)}), opts=_opts()
            ),
            id="guardrails-policy-500-deep",
        ),
        pytest.param(
            lambda: _discard(pool_budget([_model()], [NodeGroup(name="g", vm_size=A10)])), id="pool-budget-shape"
        ),
        pytest.param(lambda: _discard(pool_budget([("a", _model())], "gpu")), id="pool-budget-groups"),  # type: ignore[arg-type]
        pytest.param(
            lambda: kaito_aks.KaitoReady(
                "w", ClusterAccess(kubeconfig=KUBECONFIG), [KaitoKind("workspaces", "v1beta1")], True, math.nan
            ),
            id="kaito-ready-nan",
        ),
        pytest.param(
            lambda: kaito_aks.KaitoModel(
                "m",
                {
                    "kaito_version": "0.12.0",
                    "model": "phi-4-mini-instruct",
                    "tuning": {"method": "qlora", "input": {"urls": 5}, "output": {}},
                },  # type: ignore[arg-type]
                opts=_opts(),
            ),
            id="args-nested-two-deep-as-a-mapping",
        ),
    ],
)
def test_library_misuse_gets_a_clean_error(program: Callable[[], None]) -> None:
    """Each was a traceback (or a wait that never ends) before issue 28."""
    error, _ = answer(Case("regression", program, ()))
    assert isinstance(error, InvalidArgsError), error
    assert judge(Case("regression", program, ())) == []
