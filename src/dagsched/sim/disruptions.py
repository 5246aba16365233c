"""What deviates from the plan in a run, drawn from its seed: runtime noise, node failures and repairs, stragglers
(and a fixed per-task overhead, `SimConfig.task_overhead_s`, drawn from nothing).

All of it is hidden truth: no decision point shows it. Each kind is a seeded stream of its own
(`SeedSequence(seed).spawn(4)`: first attempts' noise, retries' noise, failures, stragglers), and failures
and stragglers one stream per node, so what happens does not depend on the scheduler's choices (common random
numbers: two schedulers run on one seed meet the same failures at the same instants). The engine asks when a
node next fails, is repaired or straggles, and pushes those events on its heap (`dagsched.sim.engine`).

A fork (search on predicted runtimes) has none of it (`Disruptions.none`): no noise, no failures, no
stragglers, no overhead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dagsched.sim.config import SimConfig


@dataclass(slots=True, eq=False)
class Disruptions:
    """A run's hidden randomness, and when each node's next failure, repair and straggler episode happen."""

    first_noise: list[float]
    """each task's runtime factor on its first attempt, read per start where `sigma2` > 0 (a Python list: numpy
    scalars cost more)"""
    sigma2: float
    """variance of the log of the lognormal noise (mean 1, the configured CV); 0.0: no noise"""
    retry_rng: np.random.Generator | None
    """a retry's fresh factor (after a failure or a migration); None without noise"""
    mtbf_s: float | None
    """mean time between a node's failures; None: no failures (classic mode, forks)"""
    mttr_s: float | None
    """mean time to repair; None: a failed node stays down"""
    straggler_gap_s: float | None
    """mean time between a node's straggler episodes; None: none (classic mode, forks)"""
    straggler_duration_s: float
    """mean length of an episode"""
    n_nodes: int
    node_seqs: tuple[np.random.SeedSequence, np.random.SeedSequence] | None
    """where the per-node failure and straggler streams come from"""
    node_rngs: list[list[np.random.Generator] | None]
    """per-node failure (0) and straggler (1) streams, made on first use: 2 x m generators cost more than a whole
    small noise-free run; a SeedSequence spawns the same children whenever it first does"""
    task_overhead_s: float = 0.0
    """time added to every attempt (`SimConfig.task_overhead_s`); 0.0 in classic mode and forks"""

    @classmethod
    def draw(cls, seed: int, config: SimConfig, n_tasks: int, n_nodes: int) -> Disruptions:
        """The run's streams from its seed (the same for every scheduler)."""
        noise_seq, retry_seq, fail_seq, slow_seq = np.random.SeedSequence(seed).spawn(4)
        cv = config.noise_cv
        sigma2 = float(np.log1p(cv * cv))
        if cv > 0 and not config.classic:
            noise = np.random.default_rng(noise_seq).lognormal(-sigma2 / 2, np.sqrt(sigma2), size=n_tasks)
        else:
            noise = np.ones(n_tasks)
        rate = config.straggler_rate_per_h
        return cls(
            first_noise=noise.tolist(),
            sigma2=sigma2,
            retry_rng=np.random.default_rng(retry_seq) if sigma2 > 0 else None,
            mtbf_s=config.mtbf_s if config.mtbf_s and not config.classic else None,
            mttr_s=config.mttr_s,
            straggler_gap_s=3600.0 / rate if rate > 0 and not config.classic else None,
            straggler_duration_s=config.straggler_duration_s,
            n_nodes=n_nodes,
            node_seqs=(fail_seq, slow_seq),
            node_rngs=[None, None],
            task_overhead_s=config.task_overhead_s if not config.classic else 0.0,
        )

    @classmethod
    def none(cls) -> Disruptions:
        """Nothing deviates: runtimes are the predictions, no node fails or straggles (a fork's)."""
        return cls([], 0.0, None, None, None, None, 0.0, 0, None, [None, None])

    def retry_noise(self) -> float:
        """A fresh runtime factor for a task's second or later attempt (only called where `sigma2` > 0)."""
        s2 = self.sigma2
        return float(self.retry_rng.lognormal(-s2 / 2, np.sqrt(s2)))  # type: ignore[union-attr]

    def _node_rng(self, which: int, nd: int) -> np.random.Generator:
        """Node nd's failure (which=0) or straggler (which=1) stream."""
        streams = self.node_rngs[which]
        if streams is None:
            assert self.node_seqs is not None
            streams = [np.random.default_rng(s) for s in self.node_seqs[which].spawn(self.n_nodes)]
            self.node_rngs[which] = streams
        return streams[nd]

    def next_failure_s(self, nd: int, now: float) -> float | None:
        """When node nd next fails, counted from `now` (its last repair, or the start); None: never."""
        if self.mtbf_s is None:
            return None
        return now + float(self._node_rng(0, nd).exponential(self.mtbf_s))

    def repair_s(self, nd: int, now: float) -> float | None:
        """When node nd, failed at `now`, is repaired; None: never."""
        if self.mttr_s is None:
            return None
        return now + float(self._node_rng(0, nd).exponential(self.mttr_s))

    def next_straggler_s(self, nd: int, now: float) -> float | None:
        """When node nd next begins a straggler episode, counted from `now`; None: never."""
        if self.straggler_gap_s is None:
            return None
        return now + float(self._node_rng(1, nd).exponential(self.straggler_gap_s))

    def straggler_end_s(self, nd: int, now: float) -> float:
        """When the episode node nd begins at `now` ends."""
        return now + float(self._node_rng(1, nd).exponential(self.straggler_duration_s))
