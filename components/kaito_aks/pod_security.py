"""Pod Security Admission for the namespaces a program creates for its models and RAG engines: the
strictest level KAITO's pods pass (baseline, enforced; restricted warned about and audited), or
privileged where a model's pods mount a host directory (catalog/pod_security.yaml says which and
why, from KAITO's source at each release)."""

from __future__ import annotations

from collections.abc import Iterable

from kaito_aks import catalog
from kaito_aks.model.spec import KaitoModelArgs, chart_of

PREFIX = "pod-security.kubernetes.io"


def host_path_reason(args: KaitoModelArgs) -> str | None:
    """Why a model's pods mount a host directory (which the baseline level refuses), or None."""
    chart = chart_of(args)
    minor = ".".join(args.kaito_version.split(".")[:2])
    listed = catalog.pod_security().host_path.get(minor)
    if listed is None or chart is None or not args.model or args.tuning is not None:
        return None
    preset = catalog.find_preset(args.model, chart.preset_catalog)
    model_id = (preset.hugging_face_id if preset is not None and preset.hugging_face_id else args.model).lower()
    short = model_id.rsplit("/", 1)[-1]
    if model_id in listed.models or short in listed.preset_names:
        return listed.why
    return None


def namespace_level(models: Iterable[KaitoModelArgs]) -> str:
    """The level a namespace holding `models` enforces: baseline, or privileged for a host path."""
    levels = catalog.pod_security().levels
    return "privileged" if any(host_path_reason(m) for m in models) else levels["enforce"]


def pod_security_labels(enforce: str) -> dict[str, str]:
    """A namespace's Pod Security labels: `enforce` enforced, restricted warned about and audited
    (latest: the cluster's own version of the standards)."""
    levels = catalog.pod_security().levels
    labels: dict[str, str] = {}
    for mode, level in (("enforce", enforce), ("warn", levels["warn"]), ("audit", levels["audit"])):
        labels[f"{PREFIX}/{mode}"] = level
        labels[f"{PREFIX}/{mode}-version"] = "latest"
    return labels
