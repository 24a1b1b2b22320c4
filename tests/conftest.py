"""Shared test helpers: evaluate the real program under Pulumi mocks. (The upstream data the
conformance tests read is in tests/upstream_facts.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stacks import declared
from stacks.errors import StackConfigError
from stacks.evaluate import Evaluation, ProgramMocks, RecordingMonitor, evaluate

ROOT = Path(__file__).resolve().parent.parent
# The repository's example stacks (stacks.yaml), the stacks tests about the examples iterate: any
# other Pulumi.<stack>.yaml is a user's, checked by tests/test_user_stacks.py.
EXAMPLES = list(declared.read(ROOT).examples)

BYO_CLUSTER = {"kubeconfig": {"context": "test"}}


def config(workspaces: list[dict] | None = None, **keys: Any) -> dict[str, Any]:
    """A kubeconfig-cluster stack config by full key; `keys` by name in the kaito-aks namespace."""
    keys.setdefault("cluster", BYO_CLUSTER)
    if workspaces is not None:
        keys["workspaces"] = workspaces
    return {f"kaito-aks:{k}": v for k, v in keys.items()}


def run(cfg: dict[str, Any], *, hf_token: str | None = None, **kw: Any) -> Evaluation:
    secrets = {"kaito-aks:hfToken": hf_token} if hf_token else {}
    return evaluate(cfg, secrets=secrets, **kw)


def errors_of(cfg: dict[str, Any], **kw: Any) -> list[str]:
    """The config errors a stack fails with, after checking nothing was registered first."""
    monitor = RecordingMonitor(ProgramMocks())
    with pytest.raises(StackConfigError) as err:
        run(cfg, monitor=monitor, **kw)
    assert monitor.registrations == [], "resources were registered before the config error"
    return err.value.lines


def warnings_of(
    cfg: dict[str, Any],
    *,
    hf_token: str | None = None,
    unsized: bool = False,
    unlabelled: bool = False,
    callers: bool = False,
) -> list[str]:
    """The warnings a stack config is accepted with (it must be accepted), as `validate` prints
    them (without the file's lines); `unsized`: with those that a kubeconfig cluster's GPU pools
    are not known (one per GPU preset there); `unlabelled`: with those that a namespace the stack
    does not create gets no Pod Security labels (one per such namespace: `default` in most tests);
    `callers`: with the one that a kubeconfig cluster's NetworkPolicies may cut callers (once per
    stack without endpoints.allowFrom)."""
    from stacks.load import stack_config

    raw = {k.removeprefix("kaito-aks:"): v for k, v in cfg.items() if k.startswith("kaito-aks:")}
    checked = stack_config(raw, secrets=["hfToken"] if hf_token else [], azure_location="eastus2")
    shown_codes = (("unsized", unsized), ("pod-security-unlabelled", unlabelled), ("byo-callers", callers))
    skipped = {c for c, shown in shown_codes if not shown}
    return [w.text("schema") for w in checked.warnings if w.code not in skipped]


@pytest.fixture(autouse=True)
def _no_cached_prices(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Prices a developer's `--online` run cached (~/.cache/kaito-aks/prices) stay out of the
    tests: each test starts with an empty cache of its own, and no endpoint of the machine's."""
    monkeypatch.setenv("KAITO_AKS_PRICE_CACHE", str(tmp_path_factory.mktemp("prices")))
    monkeypatch.delenv("KAITO_AKS_RETAIL_PRICES_URL", raising=False)
    monkeypatch.delenv("KAITO_AKS_ARM_ENDPOINT", raising=False)
