"""Replay dagsched placements in SimGrid, the independent simulator the cross-check trusts.

Run as `python -m dagsched.sim.simgrid_replay < batch.json > result.json` (SimGrid's engine is a
per-process singleton, so `dagsched.sim.crosscheck` starts one process per batch). The batch is a list
of problems (`crosscheck.simgrid_payload`); all of them are simulated side by side in one SimGrid run,
each on its own hosts and links, so they never interact.

What SimGrid is asked to do, per problem:

- one host per node, with the node's speed (flop/s) and core count; a task is one sequential
  execution of `work_s x speed` flops on its node (its nominal seconds, noise included);
- one link per pair of nodes with that pair's bandwidth and the cluster's latency, FATPIPE (each
  transfer gets the whole bandwidth: dagsched's transfers do not contend), or, with `contention`,
  a shared up-link and down-link per node (bandwidth = the node's, the latency on the up-link) and a
  route sender-up -> receiver-down, so that concurrent transfers share them max-min fair, as
  SimGrid's network model does by default; a pair with its own link keeps a dedicated one;
- the CM02 network model with its latency and bandwidth factors at 1, no TCP window bound and no
  cross traffic: a transfer alone takes `latency + size / bandwidth`, the textbook formula;
- one dispatcher actor per node that starts the node's tasks in dagsched's order (a task waits for
  the one before it on the node to have started), each as soon as its inputs are on the node and its
  request fits the node's free room (one slot per node in classic mode). That is the only decision
  the replay makes, and dagsched's `OrderReplay` makes the same one; the timings are SimGrid's.
- with `fetch_on_place` (dagsched's `network_contention` model): a transfer starts when its child is
  placed rather than when its parent ends. The dispatcher places a task (takes its request) once its
  parents are done, it fits and the task before it on the node is placed; the task's actor then sends
  every input from another node at once (`Comm.sendto_async`), waits for all, and executes.

Output: per problem, the start and finish of every task (SimGrid's clock).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

DEBIAN_DIST_PACKAGES = "/usr/lib/python3/dist-packages"
"""Where Debian's python3-simgrid puts its one extension module (built for Debian's CPython 3.11)."""

_CONFIG = (
    "--cfg=network/model:CM02",
    "--cfg=network/latency-factor:1",
    "--cfg=network/bandwidth-factor:1",
    "--cfg=network/weight-S:0",
    "--cfg=network/TCP-gamma:0",
    "--cfg=network/crosstraffic:0",
    "--cfg=network/optim:Full",
    "--cfg=maxmin/precision:1e-13",
    "--cfg=surf/precision:1e-13",
    "--log=root.thresh:critical",
)
"""SimGrid settings: the textbook network (see the module docstring) and tight solver precisions (the
defaults, 1e-5 and 1e-9, would themselves exceed the cross-check's 1e-9 relative tolerance). The full max-min
solve at every change (`network/optim:Full`) instead of CM02's default lazy update: on shared links the lazy
update let two flows into one node's down-link exceed its capacity (a 500-task `layered` problem: finishes
1.8e-2 apart, then equal to dagsched's to the last digit with Full)."""

EPS = 1e-9  # dagsched's capacity tolerance (`dagsched.model.compiled.EPS`), copied to keep this file import-light


def load_simgrid() -> ModuleType | None:
    """The `simgrid` module: an installed one, else Debian's from its dist-packages, else None.

    Only that one module is loaded from Debian's folder (nothing else there goes on sys.path).
    """
    if "simgrid" in sys.modules:
        return sys.modules["simgrid"]
    if importlib.util.find_spec("simgrid") is not None:
        return importlib.import_module("simgrid")
    from pathlib import Path

    found = sorted(Path(DEBIAN_DIST_PACKAGES).glob("simgrid.cpython-*.so"))
    if not found:
        return None
    spec = importlib.util.spec_from_file_location("simgrid", found[0])
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules["simgrid"] = module
    try:
        spec.loader.exec_module(module)
    except ImportError:
        del sys.modules["simgrid"]
        return None
    return module


def simgrid_unavailable_reason() -> str | None:
    """None where SimGrid can be used here, else why not (for a test's skip message)."""
    if importlib.util.find_spec("simgrid") is not None:
        return None
    from pathlib import Path

    if not list(Path(DEBIAN_DIST_PACKAGES).glob("simgrid.cpython-311-*.so")):
        return (
            "SimGrid's Python module is not installed: apt-get install python3-simgrid "
            f"(looked for an importable `simgrid` and for {DEBIAN_DIST_PACKAGES}/simgrid.cpython-311-*.so)"
        )
    return None


class _Problem:
    """One problem of the batch inside the shared SimGrid run."""

    def __init__(self, sg: ModuleType, engine: Any, zone: Any, k: int, p: dict[str, Any]) -> None:
        self.sg, self.engine = sg, engine
        m = len(p["speed"])
        self.speed: list[float] = p["speed"]
        self.node: list[int] = p["node"]
        self.work_s: list[float] = p["work_s"]
        self.req: list[list[float]] = p["req"]
        self.children: list[list[tuple[int, float]]] = [[] for _ in self.node]
        n_in = [1] * len(self.node)  # the workflow's submission, then one per parent
        for src, dst, data in p["edges"]:
            self.children[src].append((dst, data))
            n_in[dst] += 1
        self.n_in = n_in
        self.queues: list[list[int]] = p["queues"]
        self.fetch_on_place = bool(p.get("fetch_on_place", False))
        self.latency_s = float(p["latency_s"])
        self.parents: list[list[tuple[int, float]]] = [[] for _ in self.node]
        for src, dst, data in p["edges"]:
            self.parents[dst].append((src, data))
        self.cap: list[list[float]] = p["cap"]
        self.start = [float("nan")] * len(self.node)
        self.finish = [float("nan")] * len(self.node)
        self.hosts = []
        for nd in range(m):
            host = zone.create_host(f"p{k}n{nd}", [p["speed"][nd]])
            host.core_count = int(p["cores"][nd])
            host.seal()
            self.hosts.append(host)
        self.mailboxes = [sg.Mailbox.by_name(f"p{k}n{nd}") for nd in range(m)]
        self._links(zone, k, p)
        for nd in range(m):
            if self.queues[nd]:
                sg.Actor.create(f"p{k}d{nd}", self.hosts[nd], self._dispatcher, nd, float(p["boot_s"][nd]))
        by_release: dict[tuple[int, float], list[int]] = {}
        for t, nd in enumerate(self.node):
            if nd >= 0:
                by_release.setdefault((nd, float(p["release_s"][t])), []).append(t)
        for (nd, at), tasks in sorted(by_release.items()):
            sg.Actor.create(f"p{k}r{nd}", self.hosts[nd], self._release, nd, at, tasks)

    def _links(self, zone: Any, k: int, p: dict[str, Any]) -> None:
        sg, m = self.sg, len(self.hosts)
        policy = sg.Link.SharingPolicy
        latency = float(p["latency_s"])
        bw: list[list[float]] = p["bandwidth"]
        own: set[tuple[int, int]] = {(a, b) for a, b in p["own_links"]}

        def link(name: str, bandwidth: float, lat: float, shared: bool) -> Any:
            made = zone.create_link(name, [bandwidth]).set_latency(lat)
            made.set_sharing_policy(policy.SHARED if shared else policy.FATPIPE, None)
            made.seal()
            return sg.LinkInRoute(made)

        if p["contention"]:
            up = [link(f"p{k}up{a}", p["node_bw"][a], latency, True) for a in range(m)]
            down = [link(f"p{k}down{a}", p["node_bw"][a], 0.0, True) for a in range(m)]
        hosts = [h.netpoint for h in self.hosts]
        for a in range(m):
            for b in range(a + 1, m):
                if p["contention"] and (a, b) not in own:
                    zone.add_route(hosts[a], hosts[b], None, None, [up[a], down[b]], False)
                    zone.add_route(hosts[b], hosts[a], None, None, [up[b], down[a]], False)
                else:  # a dedicated wire (both directions share it under contention)
                    route = [link(f"p{k}l{a}-{b}", bw[a][b], latency, bool(p["contention"]))]
                    zone.add_route(hosts[a], hosts[b], None, None, route, True)

    def _release(self, nd: int, at: float, tasks: list[int]) -> None:
        if at > 0:
            self.sg.this_actor.sleep_until(at)
        for t in tasks:
            self.mailboxes[nd].put(("in", t), 0)

    def _dispatcher(self, nd: int, boot_s: float) -> None:
        sg = self.sg
        if boot_s > 0:
            sg.this_actor.sleep_until(boot_s)
        queue, mailbox = self.queues[nd], self.mailboxes[nd]
        free = list(self.cap[nd])
        inputs_left = {t: self.n_in[t] for t in queue}
        head = done = 0
        while done < len(queue):
            kind, t = mailbox.get()
            if kind == "in":
                inputs_left[t] -= 1
            else:
                done += 1
                r = self.req[t]
                free = [free[0] + r[0], free[1] + r[1], free[2] + r[2]]
            while head < len(queue):
                h = queue[head]
                r = self.req[h]
                if inputs_left[h] or any(f + EPS < q for f, q in zip(free, r, strict=True)):
                    break
                free = [free[0] - r[0], free[1] - r[1], free[2] - r[2]]
                head += 1
                sg.Actor.create(f"t{h}", self.hosts[nd], self._task, h)

    def _task(self, t: int) -> None:
        sg, nd = self.sg, self.node[t]
        if self.fetch_on_place:  # placed now: fetch the inputs from other nodes, all at once
            placed = self.engine.clock
            remote = [(p, int(round(data))) for p, data in self.parents[t] if self.node[p] != nd]
            comms = [sg.Comm.sendto_async(self.hosts[self.node[p]], self.hosts[nd], b) for p, b in remote if b > 0]
            for comm in comms:
                comm.wait()
            # SimGrid serialises simultaneous zero-byte comms (40 of them take 40 latencies, 40 one-byte ones take
            # one): an input without bytes is the route's latency alone, as in SimGrid for a single one
            if any(b == 0 for _, b in remote) and self.engine.clock < placed + self.latency_s:
                sg.this_actor.sleep_until(placed + self.latency_s)
        self.start[t] = self.engine.clock
        sg.this_actor.execute(self.work_s[t] * self.speed[nd])
        self.finish[t] = self.engine.clock
        for c, data in self.children[t]:
            dst = self.node[c]
            if dst == nd:
                self.mailboxes[nd].put(("in", c), 0)
            elif self.fetch_on_place:  # the notice is "parent done", handed over at the child's node (no latency)
                sg.Actor.create(f"n{t}-{c}", self.hosts[dst], self._notify, dst, c)
            else:  # the transfer's actor lives at the receiver, so its notice to the dispatcher is local
                sg.Actor.create(f"x{t}-{c}", self.hosts[dst], self._transfer, nd, dst, data, c)
        self.mailboxes[nd].put(("done", t), 0)

    def _notify(self, dst: int, c: int) -> None:
        self.mailboxes[dst].put(("in", c), 0)

    def _transfer(self, src: int, dst: int, data: float, c: int) -> None:
        # SimGrid takes whole bytes: a fractional size is rounded (at most half a byte, far below 1e-9 relative)
        self.sg.Comm.sendto(self.hosts[src], self.hosts[dst], int(round(data)))
        self.mailboxes[dst].put(("in", c), 0)


def replay_batch(problems: list[dict[str, Any]], sg: ModuleType | None = None) -> list[dict[str, list[float]]]:
    """Simulate every problem of the batch in one SimGrid run; per problem its tasks' starts and finishes."""
    sg = sg or load_simgrid()
    if sg is None:
        raise RuntimeError(simgrid_unavailable_reason() or "SimGrid cannot be imported")
    engine = sg.Engine(["dagsched-crosscheck", *_CONFIG])
    zone = sg.NetZone.create_full_zone("dagsched")
    runs = [_Problem(sg, engine, zone, k, p) for k, p in enumerate(problems)]
    zone.seal()
    engine.run()
    return [{"start": r.start, "finish": r.finish} for r in runs]


def main(read: Callable[[], str] = sys.stdin.read) -> None:
    problems = json.loads(read())
    json.dump(replay_batch(problems), sys.stdout)


if __name__ == "__main__":
    main()
