"""A model's autoscaling as keda-kaito-scaler reads it: annotations on its InferenceSet in the
scaler's 0.6 format (keda-kaito-scaler@v0.6.2:pkg/constants/constants.go:18-47, README.md:128-154),
from which the scaler makes a KEDA ScaledObject named after the InferenceSet
(pkg/scaledobject/provisioner.go:512-550), and KEDA an HPA `keda-hpa-<name>`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from kaito_aks.serving.spec import ModelAutoscaleArgs
from kaito_aks.vocabulary import MetricType

PREFIX = "scaledobject.kaito.sh/"
AUTO_PROVISION = PREFIX + "auto-provision"
MIN_REPLICAS = PREFIX + "min-replicas"
MAX_REPLICAS = PREFIX + "max-replicas"
METRICS = PREFIX + "metrics"
EVALUATION_WINDOW = PREFIX + "evaluationwindow"
SCALE_UP_COOLDOWN = PREFIX + "scaleupcooldown"
SCALE_DOWN_COOLDOWN = PREFIX + "scaledowncooldown"
# pulumi-kubernetes applies the InferenceSet with force (await.go:905-908): when autoscaling is
# turned off, the replica count the stack then sets takes .spec.replicas back from the HPA's
# field manager instead of failing with a conflict.
PATCH_FORCE = {"pulumi.com/patchForce": "true"}
SCALED_OBJECT_API = "keda.sh/v1alpha1"
HPA_PREFIX = "keda-hpa-"  # kedacore/keda@v2.20.2:controllers/keda/hpa.go:402


@dataclass(frozen=True)
class AutoscalePlan:
    """What the scaler is told, and what appears once it acts."""

    min_replicas: int
    max_replicas: int
    metric: str
    metric_type: MetricType
    up_threshold: float
    down_threshold: float
    annotations: dict[str, str]

    def describe(self) -> dict[str, Any]:
        """The plan as the stack's outputs and `status` show it."""
        return {
            "minReplicas": self.min_replicas,
            "maxReplicas": self.max_replicas,
            "metric": self.metric,
            "metricType": self.metric_type,
            "upThreshold": self.up_threshold,
            "downThreshold": self.down_threshold,
        }


def autoscale_plan(args: ModelAutoscaleArgs, metric_type: MetricType) -> AutoscalePlan:
    """The annotations for checked args (model/serving.py holds the scaler's rules)."""
    entry: dict[str, Any] = {
        "name": args.metric,
        "type": metric_type,
        "upthreshold": args.up_threshold,
        "downthreshold": args.down_threshold,
    }
    if args.metric_cache_window_seconds is not None:
        entry["metriccachewindow"] = args.metric_cache_window_seconds
    annotations = {
        AUTO_PROVISION: "true",
        MIN_REPLICAS: str(args.min_replicas),
        MAX_REPLICAS: str(args.max_replicas),
        METRICS: yaml.safe_dump([entry], sort_keys=False, default_flow_style=False),
    }
    for key, value in (
        (EVALUATION_WINDOW, args.evaluation_window_seconds),
        (SCALE_UP_COOLDOWN, args.scale_up_cooldown_seconds),
        (SCALE_DOWN_COOLDOWN, args.scale_down_cooldown_seconds),
    ):
        if value is not None:
            annotations[key] = str(value)
    return AutoscalePlan(
        args.min_replicas,
        args.max_replicas,
        args.metric,
        metric_type,
        args.up_threshold,
        args.down_threshold,
        annotations,
    )
