"""An SSH public key for Azure Linux VMs whose private half nobody has. Azure requires a key on
every Linux VM it creates, and self-hosted Karpenter stamps the one it is given on each node
(Karpenter v1.12.0 pkg/operator/options/options.go: SSH_PUBLIC_KEY, required). Nobody needs to
log in to those nodes (`kubectl debug node/...` reaches them), so the key is made, its public
half kept, and its private half dropped in the same call: never in state, never on disk.

A dynamic resource (not pulumi-tls, whose provider plugin a Pulumi engine must download and which
keeps the private key in state): the key is made once, on create, and stays the same across
updates until the resource is replaced."""

from __future__ import annotations

import hashlib
from typing import Any

import pulumi
from pulumi import dynamic

RSA_BITS = 4096  # what `az aks create --generate-ssh-keys` makes; Azure takes RSA of 2048 bits and more


def openssh_public_key(bits: int = RSA_BITS) -> str:
    """A new RSA key's public half in OpenSSH's format (`ssh-rsa AAAA...`); the private half is
    not returned and goes with this call's frame."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    private = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    return (
        private.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
    )


class SshPublicKeyProvider(dynamic.ResourceProvider):
    """Creates the key; nothing changes it afterwards (there are no inputs to change)."""

    def create(self, props: dict[str, Any]) -> dynamic.CreateResult:
        key = openssh_public_key()
        fingerprint = hashlib.sha256(key.encode()).hexdigest()[:16]
        return dynamic.CreateResult(f"ssh-public-key-{fingerprint}", {"public_key_openssh": key})

    def diff(self, _id: str, _olds: dict[str, Any], _news: dict[str, Any]) -> dynamic.DiffResult:
        return dynamic.DiffResult(changes=False)


_PROVIDER = SshPublicKeyProvider()


class SshPublicKey(dynamic.Resource, module="kaito-aks", name="SshPublicKey"):
    """An RSA 4096 SSH public key (`public_key_openssh`) whose private key was discarded when it
    was made: VMs that carry it accept no SSH login by key."""

    public_key_openssh: pulumi.Output[str]

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None):
        super().__init__(_PROVIDER, name, {"public_key_openssh": None}, opts)
