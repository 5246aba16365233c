"""The contended network of cloud mode with `SimConfig.network_contention`: max-min fair transfers.

Each node has one up-link and one down-link, each of the node's bandwidth; a transfer from node a to
node b crosses a's up-link and b's down-link, unless the cluster gives the pair its own link
(`Cluster.links`): then it crosses that one link (shared by both directions). A transfer first spends
the cluster's latency (using no bandwidth), then moves its bytes; the transfers moving bytes at an
instant share every link max-min fair (progressive filling: raise every rate together, freeze the flows
of a link once it is full, go on with the rest), which is SimGrid's CM02 model when every route has the
same latency. Rates change only when a transfer starts moving bytes or ends, so the engine keeps one
pending event: the next of those instants (`next_change_s`).

Alone, a transfer takes `latency + size / bandwidth(a, b)`: the free network's time, so contention can
only delay. `dagsched.sim.validate` recomputes the same sharing from the trace with its own code.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

from dagsched.model.compiled import CompiledProblem

_DONE_REL = 1e-12
"""A transfer with at most this fraction of its bytes left (rounding of rate x time) has arrived."""


@dataclass(slots=True)
class Flow:
    """One transfer in flight: the edge parent -> child's bytes from node src to node dst."""

    parent: int
    child: int
    src: int
    dst: int
    data_bytes: float
    start_s: float
    enter_s: float  # start + latency: from here it moves bytes
    links: tuple[int, ...]
    left: float  # bytes still to move
    rate: float = 0.0  # bytes/s while moving
    eta_s: float = math.inf  # when it arrives at `rate` (set by `reshare`)


def link_capacities(cp: CompiledProblem) -> tuple[list[float], dict[tuple[int, int], int]]:
    """Capacities of the links (up-links 0..m-1, down-links m..2m-1, then the pairs' own links) and the index
    of each own link by its (low, high) node pair."""
    cluster = cp.problem.cluster
    caps = [float(n.bandwidth) for n in cluster.nodes] * 2
    pos = {nid: i for i, nid in enumerate(cp.node_ids)}
    own: dict[tuple[int, int], int] = {}
    for link in cluster.links:
        a, b = pos[link.a], pos[link.b]
        key = (min(a, b), max(a, b))
        if key not in own:
            own[key] = len(caps)
            caps.append(float(link.bandwidth))
        else:  # a later entry for the same pair overrides, as in `compile_problem`
            caps[own[key]] = float(link.bandwidth)
    return caps, own


def max_min_rates(flows: list[tuple[int, ...]], caps: list[float]) -> list[float]:
    """Max-min fair rate of each flow (the links it crosses) by progressive filling."""
    rates = [0.0] * len(flows)
    left = list(caps)
    on_link: dict[int, list[int]] = {}
    for i, links in enumerate(flows):
        for link in links:
            on_link.setdefault(link, []).append(i)
    unfrozen = {link: len(fs) for link, fs in on_link.items()}
    frozen = [False] * len(flows)
    n_left = len(flows)
    while n_left:
        share = min(left[link] / n for link, n in unfrozen.items() if n)
        full = [link for link, n in unfrozen.items() if n and left[link] / n <= share]
        for link in full:
            for i in on_link[link]:
                if frozen[i]:
                    continue
                frozen[i] = True
                n_left -= 1
                rates[i] = share
                for other in flows[i]:
                    left[other] -= share
                    unfrozen[other] -= 1
    return rates


class Network:
    """The transfers in flight and their max-min rates (times in seconds, sizes in bytes)."""

    def __init__(self, cp: CompiledProblem) -> None:
        self.m = cp.n_nodes
        self.latency_s = float(cp.latency_s)
        self.caps, self.own = link_capacities(cp)
        self.flows: list[Flow] = []  # in start order
        self.last_s = 0.0
        self.n_on_link = [0] * len(self.caps)

    def copy(self) -> Network:
        other = Network.__new__(Network)
        other.m, other.latency_s, other.caps, other.own = self.m, self.latency_s, self.caps, self.own
        other.flows = [copy.copy(f) for f in self.flows]
        other.last_s = self.last_s
        other.n_on_link = list(self.n_on_link)
        return other

    def route(self, a: int, b: int) -> tuple[int, ...]:
        own = self.own.get((min(a, b), max(a, b)))
        return (own,) if own is not None else (a, self.m + b)

    def bandwidth(self, a: int, b: int) -> float:
        """A lone transfer's rate from a to b."""
        return min(self.caps[link] for link in self.route(a, b))

    def advance(self, now: float) -> None:
        """Move every flow's bytes on to `now` at its current rate."""
        dt = now - self.last_s
        if dt > 0:
            for f in self.flows:
                if f.rate > 0:
                    f.left = max(f.left - f.rate * dt, 0.0)
        self.last_s = max(self.last_s, now)

    def add(self, parent: int, child: int, src: int, dst: int, data_bytes: float, now: float) -> Flow:
        """A transfer starting now (call `advance(now)` first and `reshare(now)` after the additions)."""
        links = self.route(src, dst)
        f = Flow(parent, child, src, dst, float(data_bytes), now, now + self.latency_s, links, float(data_bytes))
        self.flows.append(f)
        for link in links:
            self.n_on_link[link] += 1
        return f

    def remove(self, f: Flow) -> None:
        self.flows.remove(f)
        for link in f.links:
            self.n_on_link[link] -= 1

    def arrived(self, now: float) -> list[Flow]:
        """The flows that are through at `now` (latency spent and no bytes left); removed from the network."""
        out = [f for f in self.flows if f.enter_s <= now and (f.eta_s <= now or f.left <= _DONE_REL * f.data_bytes)]
        for f in out:
            self.remove(f)
        return out

    def reshare(self, now: float) -> None:
        """Recompute the rates of the flows moving bytes at `now`."""
        moving = [f for f in self.flows if f.enter_s <= now]
        rates = max_min_rates([f.links for f in moving], self.caps)
        for f in self.flows:
            f.rate, f.eta_s = 0.0, math.inf
        for f, r in zip(moving, rates, strict=True):
            f.rate, f.eta_s = r, now + f.left / r

    def next_change_s(self) -> float:
        """The next instant a flow starts moving bytes or arrives, at the current rates (inf: no flow)."""
        return min((f.eta_s if f.rate > 0 else f.enter_s for f in self.flows), default=math.inf)

    def flows_to(self, child: int) -> list[Flow]:
        return [f for f in self.flows if f.child == child]

    def eta_s(self, f: Flow, now: float) -> float:
        """When f arrives if its rate holds (once it moves bytes: its lone rate until then)."""
        if f.enter_s > now or f.rate <= 0:
            return max(f.enter_s, now) + f.left / self.bandwidth(f.src, f.dst)
        return f.eta_s

    def estimate_s(self, a: int, b: int, data_bytes: float, now: float) -> float:
        """When a transfer of `data_bytes` from a to b starting now would arrive, on an equal share of each
        link with the flows on it now (an estimate: they may end sooner, others may join)."""
        rate = min(self.caps[link] / (self.n_on_link[link] + 1) for link in self.route(a, b))
        return now + self.latency_s + data_bytes / rate

    def estimate_all_s(self, a: int, data_bytes: float, now: float) -> list[float]:
        """`estimate_s` from node a to every node (a itself: now, nothing moves)."""
        return [now if b == a else self.estimate_s(a, b, data_bytes, now) for b in range(self.m)]
