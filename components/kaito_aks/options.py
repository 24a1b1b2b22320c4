"""Resource options every component uses for itself and its children."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi


def component_type(opts: pulumi.ResourceOptions | None, former_types: Sequence[str]) -> pulumi.ResourceOptions:
    """`opts` plus an alias for each type token the component had before: a stack deployed with
    an earlier version keeps its URNs (and its children's), so nothing is replaced."""
    aliases: list[pulumi.Input[str] | pulumi.Alias] = [pulumi.Alias(type_=t) for t in former_types]
    return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(aliases=aliases))


def child_options(
    parent: pulumi.ComponentResource, opts: pulumi.ResourceOptions | None, **extra: Any
) -> pulumi.ResourceOptions:
    """Options for a component's child: parented to the component, and held back by whatever
    the component itself depends on. (The engine records a component's dependencies on the
    component only; without this a child could be created, or deleted, out of order.)"""
    depends_on: list[Any] = []
    if opts is not None and opts.depends_on is not None:
        depends_on = opts.depends_on if isinstance(opts.depends_on, list) else [opts.depends_on]
    extra_deps: list[pulumi.Resource] = extra.pop("depends_on", None) or []
    if not extra.get("protect"):
        # An explicit protect=False would override what the child inherits from its parent
        # (a component created with opts.protect=True must protect its children).
        extra.pop("protect", None)
    return pulumi.ResourceOptions(parent=parent, depends_on=[*depends_on, *extra_deps], **extra)
