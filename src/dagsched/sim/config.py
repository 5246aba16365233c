"""Settings of one simulated run: mode, hidden noise, failures, stragglers, billing."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class SimConfig(BaseModel):
    """How reality deviates from the prediction, and how it is billed.

    `classic=True` is the textbook model of HEFT and CPOP: one task at a time per
    node, exact runtimes, no failures, stragglers, boot delays or overrun guard.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    classic: bool = Field(False, description="textbook model: one task per node, exact runtimes")
    noise_cv: float = Field(0.0, ge=0, le=5, description="coefficient of variation of the lognormal runtime noise")
    mtbf_s: float | None = Field(None, gt=0, description="mean time between failures of each node; None: none")
    mttr_s: float | None = Field(600.0, gt=0, description="mean time to repair a failed node; None: never repaired")
    straggler_rate_per_h: float = Field(0.0, ge=0, description="straggler episodes per node per hour")
    straggler_factor: float = Field(3.0, ge=1, description="slowdown factor of a node during an episode")
    straggler_duration_s: float = Field(300.0, gt=0, description="mean length of an episode")
    boot_delay: bool = Field(True, description="honour the nodes' boot_delay (at start and after repair)")
    overrun_factor: float | None = Field(
        None, gt=1, description="stop and migrate a task running past this multiple of its prediction"
    )
    max_migrations: int = Field(1, ge=0, description="overrun migrations allowed per task")
    billing_granularity_s: float = Field(1.0, gt=0, description="billed time is rounded up to a multiple of this")
    billing_minimum_s: float = Field(0.0, ge=0, description="minimum billed time of a node that ran anything")
    task_overhead_s: float = Field(
        0.0,
        ge=0,
        description="hidden time added to every attempt (a real cluster's per-task launch and report latency): "
        "it holds the node's resources like the work itself, and no scheduler sees it",
    )
    network_contention: bool = Field(
        False,
        description="cloud mode: transfers share each node's up-link and down-link max-min fair (sim/network.py); "
        "a task's inputs are sent once it is placed",
    )

    @model_validator(mode="after")
    def _classic_is_exact(self) -> SimConfig:
        hidden = self.noise_cv or self.mtbf_s or self.straggler_rate_per_h or self.overrun_factor
        if self.classic and (hidden or self.task_overhead_s):
            raise ValueError(
                "classic mode is exact: noise_cv, mtbf_s, straggler_rate_per_h, overrun_factor and task_overhead_s "
                "must be off"
            )
        if self.classic and self.network_contention:
            raise ValueError("network_contention is a cloud-mode model: classic mode keeps the textbook free network")
        return self

    @property
    def seed_free(self) -> bool:
        """No hidden randomness: no noise, failures or stragglers, so the run seed cannot change a run."""
        return self.classic or (self.noise_cv == 0 and self.mtbf_s is None and self.straggler_rate_per_h == 0)

    @property
    def effective_boot_delay(self) -> bool:
        return self.boot_delay and not self.classic


MODES: dict[str, SimConfig] = {
    "classic": SimConfig(classic=True),
    "cloud": SimConfig(noise_cv=0.2),
    "shared": SimConfig(noise_cv=0.3, mtbf_s=86_400.0, straggler_rate_per_h=0.5),
}
"""The named modes every part of dagsched means by these words: `classic` is the textbook model of HEFT and
CPOP; `cloud` adds runtime noise (CV 0.2); `shared` is a loaded cloud (noise CV 0.3, each node failing once a
day on average and repaired in 10 minutes on average, 3x straggler episodes of about 5 minutes twice an hour)."""


def mode_settings(name: str) -> dict[str, object]:
    """The SimConfig fields a named mode sets (what differs from the defaults)."""
    return MODES[name].model_dump(exclude_defaults=True)
