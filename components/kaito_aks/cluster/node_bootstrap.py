"""How a node the cluster did not make joins it: a kubelet bootstrap token of the program's own,
as Kubernetes' bootstrap-token authenticator reads it (a `bootstrap.kubernetes.io/token` Secret
`bootstrap-token-<id>` in kube-system), and the two bindings that let its holders ask for a node
certificate and have it approved (TLS bootstrapping). Microsoft's AKS Flex Node joins nodes to
AKS clusters this way; self-hosted Karpenter hands the token to every VM it creates.

AKS keeps a token of its own, but under a random name and rotated by AKS: a Pulumi program can
neither find it nor rely on it, so it makes its own. The token expires: its Secret's
`expiration` (k8s.io/cluster-bootstrap token/api/types.go:44-48 at v0.36.3), RFC 3339, an
unparseable one counting as lapsed (util/secrets/secrets.go:59-67), from which the API server's
bootstrap-token authenticator refuses it (kubernetes plugin/pkg/auth/authenticator/token/
bootstrap/bootstrap.go:129 at v1.36.3). kube-controller-manager's token cleaner, which deletes
lapsed Secrets, is off unless a cluster turns it on (cmd/kube-controller-manager/app/
bootstrap.go:55-60): a replaced token's Secret is deleted by `pulumi up` itself. `pulumi up`
replaces the token once half its lifetime has passed, so a stack brought up at least that often
never holds a lapsed one; changing `rotation` replaces it at once. A lifetime of None is a token
that never expires (as every token did before tokens expired): kept until `rotation` changes."""

from __future__ import annotations

import secrets
import string
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import pulumi
import pulumi_kubernetes as k8s
from pulumi import dynamic

from kaito_aks.options import child_options, component_type
from kaito_aks.schema import Matches, Range, args_class
from kaito_aks.validation import checked_args

TYPE = "kaito-aks:index:NodeBootstrapToken"
FORMER_TYPES: tuple[str, ...] = ()  # new in 0.4.0
# The token's format (Kubernetes' bootstrap-token authenticator): [a-z0-9]{6}.[a-z0-9]{16}.
ALPHABET = string.ascii_lowercase + string.digits
ID_LENGTH, SECRET_LENGTH = 6, 16
GROUP_PREFIX = "system:bootstrappers:"
GROUP = Matches(
    r"system:bootstrappers:[a-z0-9:-]{0,55}[a-z0-9]",
    "a group of bootstrap-token holders (system:bootstrappers:, then lowercase letters, digits, ':' or '-')",
)
# ClusterRoles every API server creates (RBAC bootstrap policy): creating a CSR, and having
# kube-controller-manager approve a node-client CSR without a person.
NODE_BOOTSTRAPPER = "system:node-bootstrapper"
NODE_CLIENT_AUTO_APPROVE = "system:certificates.k8s.io:certificatesigningrequests:nodeclient"


DEFAULT_LIFETIME_DAYS = 30
MAX_LIFETIME_DAYS = 365


def new_token_part(length: int) -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(length))


def now() -> datetime:
    """The provider's clock (the tests move it)."""
    return datetime.now(UTC)


def rfc3339(moment: datetime) -> str:
    """As the `expiration` key takes it (time.RFC3339: k8s.io/cluster-bootstrap secret/utils.go)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def lifetime_of(props: dict[str, Any]) -> timedelta | None:
    """The token's lifetime (None: it never expires)."""
    days = props.get("lifetimeDays")
    return timedelta(days=int(days)) if days else None


def renew_at(props: dict[str, Any]) -> datetime | None:
    """When `pulumi up` replaces the token: half its lifetime after it was issued (None: never, a
    token that does not expire)."""
    issued, lifetime = props.get("issued"), lifetime_of(props)
    if lifetime is None:
        return None
    # a token made before tokens expired has no issue time: it is due at once
    return (
        parse_rfc3339(issued) + lifetime / 2 if isinstance(issued, str) and issued else datetime.min.replace(tzinfo=UTC)
    )


def dated(props: dict[str, Any]) -> dict[str, str]:
    """An issue time (now) and the expiry it gives ("" for a token that never expires)."""
    issued, lifetime = now().replace(microsecond=0), lifetime_of(props)
    return {"issued": rfc3339(issued), "expires": rfc3339(issued + lifetime) if lifetime is not None else ""}


class BootstrapTokenProvider(dynamic.ResourceProvider):
    """A fresh token id and secret on create (from `secrets`, the OS's random source) with its
    issue time and expiry. Replaced when `rotation` or `lifetimeDays` changes, and on the first
    `pulumi up` (or preview) half its lifetime after it was issued. A token that never expires
    (lifetimeDays None, as every token before issue 37) is kept until `rotation` changes, so a
    stack deployed before tokens expired sees no replacement until it asks for a lifetime; giving
    one replaces the token once (adding an expiry to its Secret would replace the Secret all the
    same: the Kubernetes provider replaces a Secret whose data changes)."""

    def create(self, props: dict[str, Any]) -> dynamic.CreateResult:
        token_id, token_secret = new_token_part(ID_LENGTH), new_token_part(SECRET_LENGTH)
        outputs = {
            "rotation": props.get("rotation", 0),
            "lifetimeDays": _given(props, "lifetimeDays"),
            "token_id": token_id,
            "token_secret": token_secret,
            **dated(props),
        }
        return dynamic.CreateResult(f"bootstrap-token-{token_id}", outputs)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> dynamic.DiffResult:
        replaces = [k for k in ("rotation", "lifetimeDays") if _given(olds, k) != _given(news, k)]
        due = renew_at(olds)
        if not replaces and due is not None and now() >= due:
            # half its lifetime has passed: a new token before this one lapses
            replaces = ["expires"]
        # created first, then the old one deleted (a node joining meanwhile has a token)
        return dynamic.DiffResult(changes=bool(replaces), replaces=replaces, delete_before_replace=False)


def _given(props: dict[str, Any], key: str) -> int | None:
    """rotation (0 when absent) or lifetimeDays (None when absent: a token of before lifetimes)."""
    value = props.get(key)
    return int(value) if value else (None if key == "lifetimeDays" else 0)


_PROVIDER = BootstrapTokenProvider()


class BootstrapToken(dynamic.Resource, module="kaito-aks", name="BootstrapToken"):
    """A random kubelet bootstrap token (`token_id` public, `token_secret` a Pulumi secret) that
    expires at `expires` (RFC 3339; "" never)."""

    token_id: pulumi.Output[str]
    token_secret: pulumi.Output[str]
    expires: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        rotation: int = 0,
        opts: pulumi.ResourceOptions | None = None,
        lifetime_days: int | None = DEFAULT_LIFETIME_DAYS,
    ):
        props: dict[str, Any] = {
            "rotation": rotation,
            "lifetimeDays": lifetime_days,
            "token_id": None,
            "token_secret": None,
            "issued": None,
            "expires": None,
        }
        secret = pulumi.ResourceOptions(additional_secret_outputs=["token_secret"])
        super().__init__(_PROVIDER, name, props, pulumi.ResourceOptions.merge(opts, secret))


@args_class
class NodeBootstrapTokenArgs:
    """A kubelet bootstrap token for nodes the cluster did not make (e.g. Karpenter's VMs)."""

    group: Annotated[str, GROUP] = "system:bootstrappers:kaito-aks"
    """The group its holders are in (besides system:bootstrappers): the bindings name it, so
    only this token's nodes gain them."""
    rotation: Annotated[int, Range(0, None, "a count: raise it to rotate")] = 0
    """Raise it to replace the token (new nodes get the new one; those that joined keep their
    certificates)."""
    lifetime_days: Annotated[int, Range(1, MAX_LIFETIME_DAYS, "days")] | None = DEFAULT_LIFETIME_DAYS
    """How many days the token lives (its Secret's `expiration`): `pulumi up` replaces it once
    half of that has passed, so bring the stack up at least every half-lifetime (a scheduled
    job), or new nodes cannot join once it lapses. None: a token that never expires (whoever
    holds it can join a node until `rotation` replaces it), as before tokens expired: a program
    deployed with one keeps it unreplaced; giving a lifetime later replaces it once."""


class NodeBootstrapToken(pulumi.ComponentResource):
    """The token's Secret in kube-system (authentication only, expiring) and two
    ClusterRoleBindings for its group: system:node-bootstrapper (create the node's CSR) and
    ...:certificatesigningrequests:nodeclient (kube-controller-manager approves it). Anyone who
    holds the token can join a node to the cluster until it expires: `token` is a Pulumi secret
    end to end."""

    token_id: pulumi.Output[str]
    """The token's public half (its Secret is `bootstrap-token-<this id>`)."""
    token: pulumi.Output[str]
    """<id>.<secret>, as a kubelet presents it (secret)."""
    expires: pulumi.Output[str]
    """When the token lapses (RFC 3339; "" never); `pulumi up` replaces it half its lifetime before."""

    secret: k8s.core.v1.Secret
    bindings: list[k8s.rbac.v1.ClusterRoleBinding]

    def __init__(self, name: str, args: NodeBootstrapTokenArgs, opts: pulumi.ResourceOptions | None = None):
        checked = checked_args("NodeBootstrapToken", name, NodeBootstrapTokenArgs, args)
        super().__init__(TYPE, name, None, component_type(opts, FORMER_TYPES))
        child = child_options(self, opts)
        generated = BootstrapToken(f"{name}-token", checked.rotation, opts=child, lifetime_days=checked.lifetime_days)
        self.token_id = generated.token_id
        self.expires = generated.expires
        self.token = pulumi.Output.secret(pulumi.Output.concat(generated.token_id, ".", generated.token_secret))
        self.secret = k8s.core.v1.Secret(
            name,
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=generated.token_id.apply(lambda i: f"bootstrap-token-{i}"),
                namespace="kube-system",
                labels={"app.kubernetes.io/managed-by": "pulumi"},
            ),
            type="bootstrap.kubernetes.io/token",
            string_data={
                "description": "kubelet bootstrap token of kaito-aks (nodes the cluster did not make)",
                "token-id": generated.token_id,
                "token-secret": generated.token_secret,
                # authentication only: no signing of the cluster-info ConfigMap, which kubeadm
                # joins read and these nodes do not
                "usage-bootstrap-authentication": "true",
                "auth-extra-groups": checked.group,
                # the API server refuses the token from then on (no key: it never expires)
                **({"expiration": generated.expires} if checked.lifetime_days is not None else {}),
            },
            opts=child,
        )
        self.bindings = [
            k8s.rbac.v1.ClusterRoleBinding(
                f"{name}-{suffix}",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=f"{checked.group.removeprefix(GROUP_PREFIX).replace(':', '-')}-{suffix}",
                    labels={"app.kubernetes.io/managed-by": "pulumi"},
                ),
                role_ref=k8s.rbac.v1.RoleRefArgs(api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=role),
                subjects=[
                    k8s.rbac.v1.SubjectArgs(api_group="rbac.authorization.k8s.io", kind="Group", name=checked.group)
                ],
                opts=child,
            )
            for suffix, role in (
                ("node-bootstrapper", NODE_BOOTSTRAPPER),
                ("node-client-approval", NODE_CLIENT_AUTO_APPROVE),
            )
        ]
        self.register_outputs({"tokenId": self.token_id, "token": self.token, "expires": self.expires})
