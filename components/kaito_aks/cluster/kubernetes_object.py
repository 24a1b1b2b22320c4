"""A Kubernetes object registered with the Pulumi kubernetes provider exactly as written.

pulumi-kubernetes' Python `CustomResource` only carries `spec` (pulumi/pulumi-kubernetes#2363),
but a KAITO Workspace keeps `resource`/`inference`/`tuning` at the top level. The provider
itself handles any `kubernetes:<apiVersion>:<Kind>` token as an unstructured object, as the
Node.js SDK's CustomResource does, so this class sends the whole manifest under that token.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import metadata
from typing import Any, cast

import pulumi

# The provider plugin version the pulumi-kubernetes SDK in this environment asks for.
PROVIDER_VERSION = metadata.version("pulumi-kubernetes")


class KubernetesObject(pulumi.CustomResource):
    """Any namespaced or cluster-scoped object, from a complete manifest (apiVersion, kind,
    metadata, and every other top-level field)."""

    def __init__(
        self,
        resource_name: str,
        manifest: dict[str, Any],
        opts: pulumi.ResourceOptions | None = None,
        outputs: Sequence[str] = (),
    ):
        """`outputs`: top-level fields the API server fills in (e.g. `status`) to read back as
        outputs (`output(name)`); they are not sent."""
        api_version, kind = manifest["apiVersion"], manifest["kind"]
        # Pin the same provider plugin the pulumi-kubernetes SDK would ask for.
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(version=PROVIDER_VERSION))
        # A property given as None is not sent, but becomes an output the engine's answer fills.
        props = {**dict.fromkeys(outputs), **manifest}
        super().__init__(f"kubernetes:{api_version}:{kind}", resource_name, props, opts)

    def output(self, name: str) -> pulumi.Output[Any]:
        """A top-level field of the object as the API server holds it (a field of the manifest, or
        one named in `outputs`)."""
        return cast(pulumi.Output[Any], getattr(self, name))
