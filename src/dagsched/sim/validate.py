"""The independent schedule validator: does a trace obey the rules every scheduler is judged by?

It reads only the compiled problem and the trace, never the simulator's bookkeeping, so a bug
in the engine cannot vouch for itself. Every violation message starts with its rule's name in
brackets, then names the task (`cp.task_name`), the node (`cp.node_ids`) and the times:

- `[attempts]`     indices in range, finite times, `end >= start`, a known outcome, `nominal_s >= 0`,
                   well-formed outages and slowdowns; attempts of one task never overlap and none
                   runs after the task's completed attempt.
- `[exactly-once]` at most one attempt per task ends "done" (a task run twice is a violation).
- `[lost]`         every task has a "done" attempt (nothing is lost to a node failure).
- `[submission]`   no attempt starts before its workflow is submitted.
- `[precedence]`   no attempt starts before every parent's done attempt ends.
- `[data-arrival]` ...nor before the parent's data arrives: `data / bandwidth + latency` after the
                   parent's end when the parent ran on another node, nothing on the same node.
                   With network contention (`trace.contention`): before the end of a transfer the trace
                   records for that edge to that node, which started no earlier than the parent's end,
                   from the parent's node, and took at least the free network's `latency + data / bandwidth`.
- `[network]`      with network contention: every recorded transfer's end is what max-min fair sharing of
                   the nodes' up-links and down-links (and the pairs' own links) gives from the recorded
                   starts and sizes (recomputed here by its own progressive filling, not the engine's);
                   a cancelled transfer leaves the network at its recorded end.
- `[capacity]`     at every instant the summed (cpu, mem, gpu) requests of the attempts running on a
                   node fit its capacity; intervals are half-open, so one ending and one starting at
                   the same instant do not overlap.
- `[exclusive]`    classic mode: one attempt at a time per node, whatever the requests (which the
                   textbook model ignores, so `[capacity]` is not checked in classic mode).
- `[boot]`         no attempt starts before the node has booted (`boot_delay_s` after time 0) nor
                   while it reboots (`boot_delay_s` after an outage's end).
- `[outage]`       no attempt runs while its node is down; one running when the node fails must
                   end at the failure instant with outcome "failed".
- `[failure]`      conversely a "failed" attempt ends exactly at the start of an outage on its node
                   (otherwise the trace invented or mis-timed a failure).
- `[duration]`     the work done over `[start, end)` (one wall second does `1/f` seconds of work during
                   a slowdown of factor `f`; overlapping slowdowns compound) equals `nominal_s` for a
                   "done" attempt and is at most `nominal_s` for a "failed" or "overrun" one.
- `[noise]`        `nominal_s / exec_s[t, n]` is exactly 1 in classic mode or without noise, and lies
                   within `noise_bounds` when they are given (a real run's trace, `trace.measured`, records
                   the times its tasks really took: exactness does not apply to it).

Tolerance: a time comparison `a <= b` passes when `a <= b + tol + rel_tol * max(|a|, |b|)`; the
defaults (1e-6 s, 1e-12) allow 2 microseconds at 1e6 s, ample for rounding in summed durations.

Complexity: O((attempts + edges) log attempts + outages log outages + slowdowns log slowdowns).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from dagsched.model.compiled import CompiledProblem
from dagsched.sim.trace import Attempt, Outage, Slowdown, Trace

OUTCOMES = ("done", "failed", "overrun", "error")
RESOURCE_NAMES = ("cpu", "mem", "gpu")
MAX_LISTED = 10  # violations shown by `raise_if_invalid`


class TraceInvalid(AssertionError):
    """A trace broke at least one scheduling rule; the message lists the first violations."""


@dataclass(frozen=True)
class ValidationReport:
    """The validator's verdict: `ok` when `violations` is empty."""

    ok: bool
    violations: list[str] = field(default_factory=list)

    def raise_if_invalid(self) -> None:
        """Raise `TraceInvalid` listing the first violations, if there are any."""
        if self.ok:
            return
        shown = self.violations[:MAX_LISTED]
        more = len(self.violations) - len(shown)
        lines = [f"trace breaks {len(self.violations)} rule(s):", *(f"  {v}" for v in shown)]
        if more:
            lines.append(f"  ... and {more} more")
        raise TraceInvalid("\n".join(lines))


def validate_trace(
    cp: CompiledProblem,
    trace: Trace,
    *,
    tol: float = 1e-6,
    rel_tol: float = 1e-12,
    noise_bounds: tuple[float, float] | None = None,
) -> ValidationReport:
    """Check `trace` against `cp` under every rule in this module's docstring.

    `tol` is the absolute tolerance in seconds (and in resource units for capacity), `rel_tol`
    the relative one; `noise_bounds = (lo, hi)` bounds `nominal_s / exec_s` when the run had noise.
    """
    ctx = _Context(cp, trace, _Tolerance(tol, rel_tol))
    violations: list[str] = []
    attempts = _check_well_formed(ctx, violations)
    by_task = _group(attempts, lambda a: a.task)
    done = _check_attempts_per_task(ctx, attempts, by_task, violations)
    _check_lost(ctx, attempts, by_task, done, violations)
    _check_precedence(ctx, attempts, done, violations)
    if trace.contention:
        _check_network(ctx, violations)
    by_node = _group(attempts, lambda a: a.node)
    if trace.classic:
        _check_exclusive(ctx, attempts, by_node, violations)
    else:
        _check_capacity(ctx, attempts, by_node, violations)
    _check_availability(ctx, attempts, violations)
    _check_durations(ctx, attempts, violations)
    _check_noise(ctx, attempts, noise_bounds, violations)
    return ValidationReport(ok=not violations, violations=violations)


# --- shared helpers -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Tolerance:
    abs_s: float
    rel: float

    def slack(self, *values: float) -> float:
        """Allowed error when comparing `values`: absolute plus relative to the largest finite one."""
        scale = 0.0
        for v in values:  # a loop, not max() of a generator: the validator calls this for every pair it compares
            if abs(v) > scale and math.isfinite(v):
                scale = abs(v)
        return self.abs_s + self.rel * scale

    def lt(self, a: float, b: float) -> bool:
        """Whether `a` lies below `b` by more than the tolerance."""
        return a < b - self.slack(a, b)

    def close(self, a: float, b: float) -> bool:
        return abs(a - b) <= self.slack(a, b)


@dataclass(frozen=True)
class _Context:
    cp: CompiledProblem
    trace: Trace
    tol: _Tolerance

    def task(self, t: int) -> str:
        return f"task '{self.cp.task_name(t)}'"

    def node(self, n: int) -> str:
        return f"node '{self.cp.node_ids[n]}'"

    def attempt(self, a: Attempt) -> str:
        """`task 'x' (done on node 'n0' over [1, 2)s)`."""
        return f"{self.task(a.task)} ({a.outcome} on {self.node(a.node)} over [{_s(a.start)}, {_s(a.end)})s)"


def _s(x: float) -> str:
    """A time in seconds, precise enough to tell 1e6 s from 1e6 + 1e-3 s."""
    return f"{x:.12g}"


def _group(attempts: Sequence[Attempt], key: Callable[[Attempt], int]) -> dict[int, list[int]]:
    """Attempt indices grouped by `key`, each group sorted by (start, end, index)."""
    groups: dict[int, list[int]] = defaultdict(list)
    for i in range(len(attempts)):
        groups[key(attempts[i])].append(i)
    for idxs in groups.values():
        idxs.sort(key=lambda i: (attempts[i].start, attempts[i].end, i))
    return dict(groups)


# --- rule: attempts (well-formed records) ------------------------------------------------------


def _check_well_formed(ctx: _Context, out: list[str]) -> list[Attempt]:
    """Attempts, outages and slowdowns are well-formed; returns the attempts later rules can read.

    Attempts with an out-of-range index or a non-finite time are reported and left out of the
    other rules (they cannot be placed on any node or timeline).
    """
    cp, trace = ctx.cp, ctx.trace
    usable: list[Attempt] = []
    for i, a in enumerate(trace.attempts):
        where = f"attempts[{i}]"
        if not 0 <= a.task < cp.n_tasks:
            out.append(f"[attempts] {where}: task index {a.task} out of range (problem has {cp.n_tasks} tasks)")
            continue
        if not 0 <= a.node < cp.n_nodes:
            out.append(
                f"[attempts] {where}: {ctx.task(a.task)} on node index {a.node} out of range "
                f"(cluster has {cp.n_nodes} nodes)"
            )
            continue
        if not (math.isfinite(a.start) and math.isfinite(a.end)):
            out.append(f"[attempts] {where}: {ctx.attempt(a)} has a non-finite time")
            continue
        if ctx.tol.lt(a.end, a.start):
            out.append(f"[attempts] {where}: {ctx.attempt(a)} ends before it starts")
        if a.outcome not in OUTCOMES:
            out.append(f"[attempts] {where}: {ctx.attempt(a)} has unknown outcome {a.outcome!r}")
        if not (math.isfinite(a.nominal_s) and a.nominal_s >= 0):
            out.append(f"[attempts] {where}: {ctx.attempt(a)} has invalid nominal_s {a.nominal_s!r}")
        usable.append(a)
    for i, o in enumerate(trace.outages):
        if not 0 <= o.node < cp.n_nodes or not math.isfinite(o.start) or not o.end >= o.start:
            out.append(f"[attempts] outages[{i}]: malformed outage {o!r}")
    for i, sd in enumerate(trace.slowdowns):
        ok_factor = math.isfinite(sd.factor) and sd.factor > 0
        if not 0 <= sd.node < cp.n_nodes or not math.isfinite(sd.start) or not sd.end >= sd.start or not ok_factor:
            out.append(f"[attempts] slowdowns[{i}]: malformed slowdown {sd!r}")
    return usable


# --- rules: attempts per task, exactly-once, lost ----------------------------------------------


def _check_attempts_per_task(
    ctx: _Context, attempts: list[Attempt], by_task: dict[int, list[int]], out: list[str]
) -> dict[int, Attempt]:
    """A task's attempts never overlap, at most one is done, none follows it; returns the done ones.

    When a task has several done attempts the earliest is the one its children may read.
    """
    done: dict[int, Attempt] = {}
    tol = ctx.tol
    for t, idxs in sorted(by_task.items()):
        runs = [attempts[i] for i in idxs]
        latest = runs[0]  # the attempt reaching furthest in time so far
        for a in runs[1:]:
            if tol.lt(a.start, latest.end) and a.end > a.start:
                out.append(f"[attempts] {ctx.attempt(a)} overlaps its own earlier attempt {ctx.attempt(latest)}")
            if a.end > latest.end:
                latest = a
        finished = [a for a in runs if a.outcome == "done"]
        if not finished:
            continue
        first = done[t] = finished[0]
        if len(finished) > 1:
            times = ", ".join(f"[{_s(a.start)}, {_s(a.end)})s on {ctx.node(a.node)}" for a in finished)
            out.append(f"[exactly-once] {ctx.task(t)} completed {len(finished)} times: {times}")
        for a in runs:
            if a.outcome != "done" and not tol.lt(a.start, first.end):
                out.append(f"[attempts] {ctx.attempt(a)} runs after the task completed at {_s(first.end)}s")
    return done


def _check_lost(
    ctx: _Context, attempts: list[Attempt], by_task: dict[int, list[int]], done: dict[int, Attempt], out: list[str]
) -> None:
    """Every task completes: one that failed with its node and was never rerun is lost."""
    for t in range(ctx.cp.n_tasks):
        if t in done:
            continue
        idxs = by_task.get(t, [])
        if idxs:
            last = attempts[idxs[-1]]
            out.append(f"[lost] {ctx.task(t)} never completed; its last attempt was {ctx.attempt(last)}")
        else:
            out.append(f"[lost] {ctx.task(t)} never ran")


# --- rules: submission, precedence, data arrival -------------------------------------------------


def _check_precedence(ctx: _Context, attempts: list[Attempt], done: dict[int, Attempt], out: list[str]) -> None:
    """Every attempt starts after its workflow's submission and after every parent's data arrived."""
    cp, tol = ctx.cp, ctx.tol
    pred_ptr = cp.pred_ptr.tolist()
    pred_idx = cp.pred_idx.tolist()
    pred_data = cp.pred_data.tolist()
    submit = cp.wf_submit_s[cp.task_wf].tolist()
    for a in attempts:
        t = a.task
        if tol.lt(a.start, submit[t]):
            out.append(f"[submission] {ctx.attempt(a)} starts before its workflow is submitted at {_s(submit[t])}s")
        for k in range(pred_ptr[t], pred_ptr[t + 1]):
            p = pred_idx[k]
            parent = done.get(p)
            if parent is None:
                out.append(f"[precedence] {ctx.attempt(a)} ran but its parent {ctx.task(p)} never completed")
                continue
            if tol.lt(a.start, parent.end):
                out.append(f"[precedence] {ctx.attempt(a)} starts before its parent {ctx.attempt(parent)} ends")
                continue
            if ctx.trace.contention:
                if parent.node != a.node:
                    _check_transfer(ctx, a, parent, pred_data[k], out)
                continue
            arrival = parent.end + cp.comm_s(pred_data[k], parent.node, a.node)
            if tol.lt(a.start, arrival):
                out.append(
                    f"[data-arrival] {ctx.attempt(a)} starts before the {_s(pred_data[k])} bytes from its parent "
                    f"{ctx.attempt(parent)} arrive at {_s(arrival)}s"
                )


def _check_transfer(ctx: _Context, a: Attempt, parent: Attempt, data: float, out: list[str]) -> None:
    """Contention: a recorded transfer brought the parent's data to the attempt's node before it started."""
    tol = ctx.tol
    fits = [
        x
        for x in ctx.trace.transfers
        if x.parent == parent.task
        and x.child == a.task
        and x.dst == a.node
        and x.arrived
        and not tol.lt(a.start, x.end)
    ]
    if not fits:
        out.append(
            f"[data-arrival] {ctx.attempt(a)} starts before any recorded transfer brought the {_s(data)} bytes "
            f"of its parent {ctx.attempt(parent)}"
        )
        return
    x = max(fits, key=lambda x: x.end)
    bound = x.start + ctx.cp.comm_s(data, parent.node, a.node)
    if x.src != parent.node or tol.lt(x.start, parent.end) or tol.lt(x.end, bound) or x.data_bytes != data:
        out.append(
            f"[data-arrival] the transfer to {ctx.attempt(a)} of its parent {ctx.attempt(parent)}'s "
            f"{_s(data)} bytes over [{_s(x.start)}, {_s(x.end)})s from {ctx.node(x.src)} is impossible: it must "
            f"leave the parent's node after the parent ends and take at least {_s(bound - x.start)}s"
        )


def _check_network(ctx: _Context, out: list[str]) -> None:
    """Contention: replay the recorded transfers on max-min fair links; each ends when the trace says."""
    cp, transfers = ctx.cp, ctx.trace.transfers
    nodes = cp.problem.cluster.nodes
    m = len(nodes)
    capacity: dict[tuple[str, int, int], float] = {("up", i, -1): float(n.bandwidth) for i, n in enumerate(nodes)}
    capacity.update({("down", i, -1): float(n.bandwidth) for i, n in enumerate(nodes)})
    index = {nid: i for i, nid in enumerate(cp.node_ids)}
    for link in cp.problem.cluster.links:  # a pair's own link, both directions on it; the last entry wins
        capacity[("pair", min(index[link.a], index[link.b]), max(index[link.a], index[link.b]))] = float(link.bandwidth)

    def links_of(src: int, dst: int) -> list[tuple[str, int, int]]:
        pair = ("pair", min(src, dst), max(src, dst))
        return [pair] if pair in capacity else [("up", src, -1), ("down", dst, -1)]

    for i, x in enumerate(transfers):
        if not (0 <= x.src < m and 0 <= x.dst < m and x.src != x.dst and x.data_bytes >= 0):
            out.append(f"[network] transfers[{i}]: malformed transfer {x!r}")
            return
    lat = cp.latency_s
    # every transfer joins the sharing at start + latency with its bytes; a cancelled one leaves at its end
    joins = sorted(range(len(transfers)), key=lambda i: (transfers[i].start + lat, i))
    bytes_left = {i: float(transfers[i].data_bytes) for i in range(len(transfers))}
    computed: dict[int, float] = {}
    active: list[int] = []
    clock, nxt = 0.0, 0
    while nxt < len(joins) or active:
        # water-filling: every unfixed transfer's rate rises together until a link is full
        rate: dict[int, float] = {}
        room = dict(capacity)
        while len(rate) < len(active):
            load: dict[tuple[str, int, int], int] = defaultdict(int)
            for i in active:
                if i not in rate:
                    for lk in links_of(transfers[i].src, transfers[i].dst):
                        load[lk] += 1
            level = min(room[lk] / n for lk, n in load.items())
            saturated = {lk for lk, n in load.items() if room[lk] / n <= level}
            for i in active:
                if i not in rate and saturated & set(links_of(transfers[i].src, transfers[i].dst)):
                    rate[i] = level
            room = dict(capacity)
            for i, r in rate.items():
                for lk in links_of(transfers[i].src, transfers[i].dst):
                    room[lk] -= r
        horizon = transfers[joins[nxt]].start + lat if nxt < len(joins) else math.inf
        for i in active:
            x = transfers[i]
            horizon = min(horizon, x.end if not x.arrived else clock + bytes_left[i] / rate[i])
        for i in active:
            bytes_left[i] -= rate[i] * (horizon - clock)
        clock = horizon
        still = []
        for i in active:
            x = transfers[i]
            through = x.arrived and (clock + bytes_left[i] / rate[i] <= clock or bytes_left[i] <= 1e-12 * x.data_bytes)
            if through:
                computed[i] = clock
            elif x.arrived or x.end > clock:
                still.append(i)
        active = still
        while nxt < len(joins) and transfers[joins[nxt]].start + lat <= clock:
            i = joins[nxt]
            nxt += 1
            if transfers[i].data_bytes == 0 and transfers[i].arrived:
                computed[i] = clock
            elif transfers[i].arrived or transfers[i].end > clock:
                active.append(i)
    for i, x in enumerate(transfers):
        if x.arrived and not ctx.tol.close(computed.get(i, math.inf), x.end):
            out.append(
                f"[network] the transfer of {ctx.task(x.parent)}'s {_s(x.data_bytes)} bytes to {ctx.task(x.child)} "
                f"from {ctx.node(x.src)} to {ctx.node(x.dst)}, started at {_s(x.start)}s, ends at {_s(x.end)}s in "
                f"the trace but at {_s(computed.get(i, math.inf))}s when the links are shared max-min fair"
            )


# --- rules: capacity and classic exclusivity ---------------------------------------------------


def _sweep_events(ctx: _Context, attempts: list[Attempt], idxs: list[int]) -> list[tuple[float, int, int]]:
    """(time, kind, attempt index) with kind 0 = end, 1 = start, sorted so ends come first.

    Ends are pulled earlier by the tolerance so an attempt ending at 10.0000000001 s does not
    collide with one starting at 10 s; attempts that then have no length occupy nothing.
    """
    events: list[tuple[float, int, int]] = []
    for i in idxs:
        a = attempts[i]
        end_key = a.end - ctx.tol.slack(a.start, a.end)
        if end_key > a.start:
            events.append((a.start, 1, i))
            events.append((end_key, 0, i))
    events.sort()
    return events


def _running_names(ctx: _Context, attempts: list[Attempt], running: dict[int, None]) -> str:
    return ", ".join(f"'{ctx.cp.task_name(attempts[i].task)}'" for i in running)


def _check_capacity(ctx: _Context, attempts: list[Attempt], by_node: dict[int, list[int]], out: list[str]) -> None:
    """Summed requests of the attempts running on a node fit its capacity at every instant.

    One message per overload episode: from the start that overloads the node until it fits again.
    """
    cp = ctx.cp
    req = cp.req.tolist()
    for n, idxs in sorted(by_node.items()):
        cap = cp.cap[n].tolist()
        limit = [c + ctx.tol.slack(c) for c in cap]
        used = [0.0, 0.0, 0.0]
        running: dict[int, None] = {}  # insertion-ordered set of attempt indices
        overloaded = False
        for time, kind, i in _sweep_events(ctx, attempts, idxs):
            r = req[attempts[i].task]
            sign = 1.0 if kind else -1.0
            for k in range(3):
                used[k] += sign * r[k]
            if kind:
                running[i] = None
            else:
                del running[i]
            over = [k for k in range(3) if used[k] > limit[k]]
            if over and kind and not overloaded:
                what = ", ".join(f"{RESOURCE_NAMES[k]} {used[k]:g} > {cap[k]:g}" for k in over)
                out.append(
                    f"[capacity] {ctx.task(attempts[i].task)} starting at {_s(time)}s overloads {ctx.node(n)}: "
                    f"{what} (running: {_running_names(ctx, attempts, running)})"
                )
            overloaded = bool(over)


def _check_exclusive(ctx: _Context, attempts: list[Attempt], by_node: dict[int, list[int]], out: list[str]) -> None:
    """Classic mode: at most one attempt runs on a node at any instant."""
    for n, idxs in sorted(by_node.items()):
        running: dict[int, None] = {}
        for time, kind, i in _sweep_events(ctx, attempts, idxs):
            if not kind:
                del running[i]
                continue
            if running:
                out.append(
                    f"[exclusive] classic mode: {ctx.task(attempts[i].task)} starts at {_s(time)}s on {ctx.node(n)} "
                    f"while {_running_names(ctx, attempts, running)} is running"
                )
            running[i] = None


# --- rules: boot, outage, failure ----------------------------------------------------------------


@dataclass(frozen=True)
class _NodeDowntime:
    """A node's outages sorted by start, with the running maximum of their end + reboot."""

    outages: list[Outage]
    starts: list[float]
    up_max: list[float]  # max over outages[:i+1] of (end + boot delay)

    @staticmethod
    def build(outages: list[Outage], boot_s: float) -> _NodeDowntime:
        ordered = sorted(outages, key=lambda o: (o.start, o.end))
        up_max: list[float] = []
        for o in ordered:
            up_max.append(max(o.end + boot_s, up_max[-1] if up_max else -math.inf))
        return _NodeDowntime(ordered, [o.start for o in ordered], up_max)

    def hit(self, tol: _Tolerance, start: float, end: float, boot_s: float) -> Outage | None:
        """The first outage whose down-or-rebooting window [start, end + boot) meets (start, end)."""
        j = bisect_left(self.starts, end - tol.slack(end)) - 1  # outages starting before `end`
        found: Outage | None = None
        while j >= 0 and tol.lt(start, self.up_max[j]):
            o = self.outages[j]
            if tol.lt(start, o.end + boot_s):
                found = o
            j -= 1
        return found

    def starts_at(self, tol: _Tolerance, t: float) -> bool:
        """Whether some outage starts at `t` (within tolerance)."""
        j = bisect_left(self.starts, t - tol.slack(t))
        return j < len(self.starts) and tol.close(self.starts[j], t)


def _check_availability(ctx: _Context, attempts: list[Attempt], out: list[str]) -> None:
    """Attempts run only while their node is up and booted; failures coincide with outages."""
    cp, tol = ctx.cp, ctx.tol
    boot = cp.boot_delay_s.tolist() if ctx.trace.boot_delay else [0.0] * cp.n_nodes
    per_node: dict[int, list[Outage]] = defaultdict(list)
    for outage in ctx.trace.outages:
        if 0 <= outage.node < cp.n_nodes:
            per_node[outage.node].append(outage)
    downtime = {n: _NodeDowntime.build(per_node.get(n, []), boot[n]) for n in range(cp.n_nodes)}
    for a in attempts:
        n, down = a.node, downtime[a.node]
        if tol.lt(a.start, boot[n]):
            out.append(f"[boot] {ctx.attempt(a)} starts before {ctx.node(n)} has booted at {_s(boot[n])}s")
        o = down.hit(tol, a.start, a.end, boot[n])
        if o is not None:
            window = f"outage [{_s(o.start)}, {_s(o.end)})s"
            if tol.lt(a.start, o.start):
                out.append(
                    f"[outage] {ctx.attempt(a)} runs through the failure of {ctx.node(n)} at {_s(o.start)}s "
                    f"({window}); it should end there as failed"
                )
            elif tol.lt(a.start, o.end):
                out.append(f"[outage] {ctx.attempt(a)} starts while {ctx.node(n)} is down ({window})")
            else:
                out.append(
                    f"[boot] {ctx.attempt(a)} starts while {ctx.node(n)} reboots after {window}, "
                    f"up again at {_s(o.end + boot[n])}s"
                )
        if a.outcome == "failed" and not down.starts_at(tol, a.end):
            out.append(
                f"[failure] {ctx.attempt(a)} failed but no outage of {ctx.node(n)} starts at {_s(a.end)}s "
                "(a failure the trace does not record)"
            )


# --- rules: duration and noise -------------------------------------------------------------------


@dataclass(frozen=True)
class _WorkClock:
    """Work done by a node since time 0: rate 1 outside slowdowns, 1/f (compounded) inside.

    `work(t) = cum[i] + (t - times[i]) * rate[i]` for `times[i] <= t < times[i+1]`; before the
    first breakpoint the rate is 1 and `work(t) = t`.
    """

    times: list[float]
    cum: list[float]
    rate: list[float]

    @staticmethod
    def build(slowdowns: list[Slowdown]) -> _WorkClock:
        changes: dict[float, list[tuple[float, int]]] = defaultdict(list)
        for sd in slowdowns:
            changes[sd.start].append((sd.factor, 1))
            if math.isfinite(sd.end):
                changes[sd.end].append((sd.factor, -1))
        times = sorted(changes)
        active: dict[float, int] = defaultdict(int)
        cum: list[float] = []
        rate: list[float] = []
        for i, t in enumerate(times):
            cum.append(t if i == 0 else cum[-1] + (t - times[i - 1]) * rate[-1])
            for factor, delta in changes[t]:
                active[factor] += delta
            rate.append(1.0 / math.prod(f**c for f, c in active.items() if c))
        return _WorkClock(times, cum, rate)

    def at(self, t: float) -> float:
        i = bisect_right(self.times, t) - 1
        if i < 0:
            return t
        return self.cum[i] + (t - self.times[i]) * self.rate[i]

    def work(self, start: float, end: float) -> float:
        return self.at(end) - self.at(start)


def _check_durations(ctx: _Context, attempts: list[Attempt], out: list[str]) -> None:
    """Work done over an attempt equals its nominal time if done, and at most that otherwise."""
    per_node: dict[int, list[Slowdown]] = defaultdict(list)
    for sd in ctx.trace.slowdowns:
        if 0 <= sd.node < ctx.cp.n_nodes and sd.end >= sd.start and sd.factor > 0 and math.isfinite(sd.factor):
            per_node[sd.node].append(sd)
    clocks = {n: _WorkClock.build(sds) for n, sds in per_node.items()}
    for a in attempts:
        clock = clocks.get(a.node)
        work = clock.work(a.start, a.end) if clock else a.end - a.start
        slack = ctx.tol.slack(a.start, a.end, a.nominal_s)
        slowed = " and slowdowns" if clock else ""
        if a.outcome == "done" and abs(work - a.nominal_s) > slack:
            out.append(
                f"[duration] {ctx.attempt(a)} did {work:.9g}s of work at {ctx.node(a.node)}'s pace{slowed}, "
                f"but its nominal time is {a.nominal_s:.9g}s"
            )
        elif a.outcome != "done" and work > a.nominal_s + slack:
            out.append(
                f"[duration] {ctx.attempt(a)} did {work:.9g}s of work{slowed}, more than its nominal "
                f"{a.nominal_s:.9g}s, yet did not finish"
            )


def _check_noise(
    ctx: _Context, attempts: list[Attempt], noise_bounds: tuple[float, float] | None, out: list[str]
) -> None:
    """nominal_s = exec_s x noise, with noise exactly 1 when the run had none."""
    exact = (ctx.trace.classic or ctx.trace.noise_cv == 0) and not ctx.trace.measured
    if not exact and noise_bounds is None:
        return
    exec_s = ctx.cp.exec_s
    for a in attempts:
        predicted = float(exec_s[a.task, a.node])
        slack = ctx.tol.slack(predicted, a.nominal_s)
        if predicted == 0.0:
            if a.nominal_s > slack:
                out.append(f"[noise] {ctx.attempt(a)} has nominal {a.nominal_s:.9g}s for a task predicted to take 0s")
        elif exact:
            if abs(a.nominal_s - predicted) > slack:
                mode = "classic mode" if ctx.trace.classic else "noise_cv 0"
                out.append(
                    f"[noise] {ctx.attempt(a)} has nominal {a.nominal_s:.9g}s but {mode} requires exactly the "
                    f"predicted {predicted:.9g}s on {ctx.node(a.node)}"
                )
        elif noise_bounds is not None:
            lo, hi = noise_bounds
            if not lo * predicted - slack <= a.nominal_s <= hi * predicted + slack:
                out.append(
                    f"[noise] {ctx.attempt(a)} has noise factor {a.nominal_s / predicted:.6g} "
                    f"(nominal {a.nominal_s:.9g}s / predicted {predicted:.9g}s), outside [{lo:g}, {hi:g}]"
                )
