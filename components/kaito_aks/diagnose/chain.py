"""The chain a model serves through, from Azure to the gateway, and what one look at it found:
each link's state, and for a link that is broken (or still in progress) the named detector that
said so, in the cluster's own words, with what that means and the fix.

A model serves when every link holds: the Azure node pool gpu-provisioner makes (`azure`), the
NodeClaims of its nodes (`nodeclaims`), the nodes and their GPU labels (`nodes`), KAITO's own
conditions (`kaito`), the pods (`pods`), the weights download (`weights`), the endpoint picker
and its InferencePool (`picker`), the HTTPRoute and its Gateway (`route`), the gateway's
AuthConfig (`auth`) and the ScaledObject (`autoscaler`). The first link that is broken is the
reason; when none is broken, the first still in progress is what it waits for.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from kaito_aks.problems import bounded

State = Literal["ok", "broken", "waiting", "unread", "none"]
"""ok: the link holds; broken: it failed, and waiting will not mend it; waiting: still in
progress; unread: not known (the credentials may not read it, no Azure credentials); none: the
model has no such link (not routed, not autoscaled, nodes of your own)."""

CHAIN: tuple[tuple[str, str], ...] = (
    ("azure", "Azure node pool"),
    ("nodeclaims", "NodeClaims"),
    ("nodes", "nodes"),
    ("kaito", "KAITO"),
    ("pods", "pods"),
    ("weights", "weights"),
    ("picker", "endpoint picker"),
    ("route", "route"),
    ("auth", "authentication"),
    ("autoscaler", "autoscaler"),
)
TITLES: dict[str, str] = dict(CHAIN)
# Which state of two wins when replicas of one model disagree, and when a link is judged twice.
_WEIGHT: dict[State, int] = {"broken": 4, "waiting": 3, "unread": 2, "ok": 1, "none": 0}
SAID_CHARS = 400  # of the cluster's words, in a finding


@dataclass(frozen=True)
class Finding:
    """What one detector found at a link: the cluster's words (`said`), what they mean, the fix.
    `broken` False: in progress (the chain waits there)."""

    detector: str
    said: str
    means: str
    fix: str
    broken: bool = True
    where: str = ""  # the object it is about (pod llm/phi-0-0, NodeClaim ws1a2b)

    def to_json(self) -> dict[str, Any]:
        return {
            "detector": self.detector,
            "where": self.where,
            "said": self.said,
            "means": self.means,
            "fix": self.fix,
        }


@dataclass(frozen=True)
class Link:
    """One link of the chain as it stands: its state, a few words on it, and its finding."""

    name: str
    state: State
    brief: str = ""
    finding: Finding | None = None

    @property
    def title(self) -> str:
        return TITLES.get(self.name, self.name)

    def to_json(self) -> dict[str, Any]:
        return {
            "link": self.name,
            "state": self.state,
            "brief": self.brief,
            "finding": self.finding.to_json() if self.finding is not None else None,
        }


def found(finding: Finding, link: str, brief: str = "") -> Link:
    """The link a finding breaks (or holds up, when it is in progress)."""
    return Link(link, "broken" if finding.broken else "waiting", brief or finding.said, finding)


def worst(links: Iterable[Link]) -> Link | None:
    """Of one link as several replicas (or looks) have it, the one that says most: broken over
    waiting over unread over ok over none; the first of equals."""
    best: Link | None = None
    for link in links:
        if best is None or _WEIGHT[link.state] > _WEIGHT[best.state]:
            best = link
    return best


@dataclass(frozen=True)
class Diagnosis:
    """Why a model does or does not serve: each link of the chain, in order."""

    subject: str  # what it is about: model llm/phi
    links: tuple[Link, ...]

    @property
    def first(self) -> Link | None:
        """The first broken link, else the first in progress; None when nothing is wrong."""
        for state in ("broken", "waiting"):
            hit = next((link for link in self.links if link.state == state), None)
            if hit is not None:
                return hit
        return None

    @property
    def broken(self) -> bool:
        return any(link.state == "broken" for link in self.links)

    def link(self, name: str) -> Link | None:
        return next((link for link in self.links if link.name == name), None)

    def lines(self) -> list[str]:
        """The first broken link with what it means and the fix, then the chain in brief."""
        first = self.first
        if first is None:
            return []
        head = "first broken link" if first.state == "broken" else "waits at"
        out = [
            f"{head}: {first.title}" + (f" ({first.finding.where})" if first.finding and first.finding.where else "")
        ]
        if first.finding is not None:
            f = first.finding
            out += [f"  {_short(f.said)}", f"  means: {f.means}", f"  fix: {f.fix}"]
        elif first.brief:
            out.append(f"  {_short(first.brief)}")
        out.append("chain: " + " · ".join(_brief(link) for link in self.links))
        return out

    def explain(self, already: str = "") -> str:
        """One sentence for an error message that already says `already`: the first broken link,
        its meaning and fix (the cluster's words only when `already` does not carry them)."""
        first = self.first
        if first is None or first.finding is None:
            return ""
        f = first.finding
        where = f" ({f.where})" if f.where else ""
        said = "" if _same_words(f.said, already) else f": {_short(f.said)}"
        state = "first broken link" if first.state == "broken" else "it waits at"
        return f"{state}: {first.title}{where}{said}; {f.means}; fix: {f.fix}"

    def to_json(self) -> dict[str, Any]:
        first = self.first
        return {
            "firstBroken": first.to_json() if first is not None and first.state == "broken" else None,
            "waitsAt": first.to_json() if first is not None and first.state == "waiting" else None,
            "links": [link.to_json() for link in self.links],
        }


def in_order(links: Iterable[Link]) -> tuple[Link, ...]:
    """Every link of the chain in its order, one each (the worst of several looks at one)."""
    by_name: dict[str, list[Link]] = {}
    for link in links:
        by_name.setdefault(link.name, []).append(link)
    out: list[Link] = []
    for name, _ in CHAIN:
        chosen = worst(by_name.get(name, []))
        out.append(chosen if chosen is not None else Link(name, "none"))
    return tuple(out)


def _brief(link: Link) -> str:
    if link.state in ("ok", "none"):
        return f"{link.title} {'ok' if link.state == 'ok' else '-'}"
    words = {"broken": "BROKEN", "waiting": "waiting", "unread": "not read"}[link.state]
    return f"{link.title} {words}" + (f" ({_short(link.brief, 80)})" if link.brief else "")


def _short(text: str, chars: int = SAID_CHARS) -> str:
    said = bounded(text)
    return said if len(said) <= chars else said[: chars - 3] + "..."


def _same_words(said: str, already: str) -> bool:
    """Whether a message already carries a finding's words (its first 60 characters)."""
    head = said.strip()[:60]
    return bool(head) and head in already


# What a log line or a message may carry that is a credential: a Hugging Face token, a bearer
# token, a key=value whose key says it is secret. Shown as <redacted>.
_SECRETS = (
    re.compile(r"\bhf_[A-Za-z0-9]{8,}"),
    re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"(?i)\b((?:api[_-]?key|token|password|secret)[\"']?\s*[:=]\s*[\"']?)[^\s\"',;]{4,}"),
)


def redacted(text: str) -> str:
    """`text` with what looks like a credential replaced (a crashed container's log line may
    print its environment)."""
    text = _SECRETS[0].sub("<redacted>", text)
    text = _SECRETS[1].sub(lambda m: f"{m.group(1)} <redacted>", text)
    return _SECRETS[2].sub(lambda m: f"{m.group(1)}<redacted>", text)
