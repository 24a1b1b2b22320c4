"""An existing Kubernetes cluster reached through a kubeconfig (the bring-your-own-cluster path)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import pulumi
import yaml

from kaito_aks.cluster.access import ClusterAccess, ClusterProvider
from kaito_aks.cluster.kubeconfig_text import KubeconfigContents
from kaito_aks.options import child_options, component_type
from kaito_aks.parsed import is_dict
from kaito_aks.problems import Problem
from kaito_aks.schema import Matches, args_class
from kaito_aks.validation import checked_args

TYPE = "kaito-aks:index:KubeconfigCluster"
FORMER_TYPES = ("kaito-aks:kubernetes:KubeconfigCluster",)
NOT_EMPTY = Matches(r".*\S.*", "a path (it is empty)")


@args_class
class KubeconfigClusterArgs:
    """Any existing cluster, reached through a kubeconfig: its contents, a file, or (neither
    given) $KUBECONFIG, then ~/.kube/config, as kubectl reads them."""

    kubeconfig: KubeconfigContents | None = None
    """Kubeconfig contents (kept secret), instead of `path`; never empty. Default: `path`, else
    $KUBECONFIG, then ~/.kube/config."""
    path: Annotated[str, NOT_EMPTY] | None = None
    """A kubeconfig file; default: $KUBECONFIG, then ~/.kube/config."""
    context: str | None = None
    """The kubeconfig context; default: the file's current context."""


def kubeconfig_file_problem(path: str, context: str | None = None, base: Path | None = None) -> str | None:
    """Why `path` cannot be the cluster's kubeconfig (missing, a directory, empty, not a
    kubeconfig, no such context), or None. A relative path is read from `base` (default: the
    working directory, where `pulumi up` runs the program and the provider reads it)."""
    try:
        given = Path(path).expanduser()
        folder = base or Path.cwd()
        file = given if given.is_absolute() else folder / given
        if not file.exists():
            where = "" if given.is_absolute() else f" (relative to {folder.resolve()})"
            return f"{path} does not exist{where}"
        if not file.is_file():
            return f"{path} is not a file"
        if file.stat().st_size > MAX_KUBECONFIG_BYTES:
            return f"{path} is larger than a kubeconfig ({MAX_KUBECONFIG_BYTES // (1 << 20)} MiB at most)"
        text = file.read_text()
    except (OSError, RuntimeError, UnicodeDecodeError, ValueError) as err:  # too long, a loop, no home, a NUL
        return f"cannot read {path}: {_reason(err)}"
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return f"{path} is not a kubeconfig (not YAML)"
    if not is_dict(data) or not data.get("clusters"):
        return f"{path} is not a kubeconfig (it lists no clusters)"
    return _context_problem(data, context, path)


MAX_KUBECONFIG_BYTES = 16 << 20


def _reason(err: Exception) -> str:
    """Why a path cannot be read, without echoing the path back (the message shows it once)."""
    if isinstance(err, OSError) and err.strerror:
        return err.strerror[0].lower() + err.strerror[1:]
    if isinstance(err, UnicodeDecodeError):
        return "it is not text"
    if isinstance(err, RuntimeError):
        return "its ~ names no home directory"
    return type(err).__name__


def _context_problem(data: dict[str, Any], context: str | None, what: str) -> str | None:
    entries: list[Any] = data.get("contexts") or []
    contexts = [c.get("name") for c in entries if is_dict(c)]
    if context is not None and context not in contexts:
        return f"{what}: no context {context!r}; it has: {', '.join(map(str, contexts)) or 'none'}"
    return None


def _contents_context_problem(contents: object, context: str | None) -> str | None:
    """Kubeconfig contents known now (text or a map) without `context` (they are checked as a
    kubeconfig elsewhere; only their context names are shown, never the contents)."""
    if context is None:
        return None
    data = contents
    if isinstance(contents, str):
        try:
            data = yaml.safe_load(contents)
        except yaml.YAMLError:
            return None
    return _context_problem(data, context, "the kubeconfig contents (`kubeconfig`)") if is_dict(data) else None


def kubeconfig_cluster_problems(args: KubeconfigClusterArgs, *, base: Path | None = None) -> list[Problem]:
    """`base`: where a relative `path` is read from (default: the working directory)."""
    problems: list[Problem] = []
    if args.kubeconfig is not None and args.path is not None:
        problems.append(
            Problem.at(
                "path", "give the kubeconfig's contents (`kubeconfig`) or a file (`path`), not both", "kubeconfig-twice"
            )
        )
    elif args.path is not None and args.path.strip():
        why = kubeconfig_file_problem(args.path, args.context, base)
        if why:
            problems.append(Problem.at("path", why, "kubeconfig-file"))
    elif args.kubeconfig is not None:
        why = _contents_context_problem(args.kubeconfig, args.context)
        if why:
            problems.append(Problem.at("context", why, "kubeconfig-context"))
    return problems


class KubeconfigCluster(pulumi.ComponentResource):
    """Any existing cluster. In Python, `provider` is the explicit Kubernetes provider every
    in-cluster resource uses, which also carries the credentials to the waits; other languages
    make a kubernetes Provider from its `kubeconfig` and `context` outputs."""

    cluster_name: pulumi.Output[str]
    """The kubeconfig context (or "kubeconfig"): the name KAITO's chart is given."""
    kubeconfig: pulumi.Output[str | None]
    """The kubeconfig as the cluster's Kubernetes provider takes it (secret): the contents, or the
    file's path; none when neither was given ($KUBECONFIG, then ~/.kube/config). Other languages
    build their kubernetes Provider from it, and give it to the components' `kubeconfig`."""
    context: pulumi.Output[str | None]
    """The kubeconfig context, for that provider; none: the file's current context."""

    provider: ClusterProvider
    """The explicit Kubernetes provider every in-cluster resource uses (Python)."""

    def __init__(self, name: str, args: KubeconfigClusterArgs, opts: pulumi.ResourceOptions | None = None):
        checked = checked_args("KubeconfigCluster", name, KubeconfigClusterArgs, args, kubeconfig_cluster_problems)
        super().__init__(TYPE, name, None, component_type(opts, FORMER_TYPES))
        access = ClusterAccess(kubeconfig=checked.kubeconfig, path=checked.path, context=checked.context)
        self.provider = ClusterProvider(name, access, opts=child_options(self, opts))
        self.cluster_name = pulumi.Output.from_input(checked.context or "kubeconfig")
        given = checked.kubeconfig if checked.kubeconfig is not None else checked.path
        self.kubeconfig = pulumi.Output.secret(given)
        self.context = pulumi.Output.from_input(checked.context)
        self.register_outputs(
            {"context": self.context, "clusterName": self.cluster_name, "kubeconfig": self.kubeconfig}
        )
