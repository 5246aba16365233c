"""The CCR knob: mean(data / bandwidth) / mean(runtime) equals the requested ratio."""

from __future__ import annotations

import numpy as np
import pytest

from dagsched.generate import FAMILIES, generate_workflow
from dagsched.model import Workflow


def ccr_of(wf: Workflow, bandwidth: float) -> float:
    comm_s = np.mean([e.data for e in wf.edges]) / bandwidth
    return float(comm_s / np.mean([t.runtime for t in wf.tasks]))


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("ccr", [0.1, 0.5, 2.0])
def test_large_instance_hits_the_requested_ccr(family: str, ccr: float) -> None:
    """On 1,000 tasks the measured CCR is within 1% of the knob for every family."""
    wf = generate_workflow(family, 1000, 9, ccr=ccr)
    assert ccr_of(wf, 1.25e9) == pytest.approx(ccr, rel=0.01)


def test_ccr_is_relative_to_the_given_bandwidth() -> None:
    """With a 10x slower network the data shrinks 10x for the same CCR."""
    fast = generate_workflow("layered", 300, 1, ccr=1.0)
    slow = generate_workflow("layered", 300, 1, ccr=1.0, bandwidth=1.25e8)
    assert ccr_of(slow, 1.25e8) == pytest.approx(1.0, rel=0.01)
    assert sum(e.data for e in fast.edges) == pytest.approx(10 * sum(e.data for e in slow.edges), rel=1e-6)


def test_zero_ccr_means_no_data_and_same_dag() -> None:
    """ccr=0 leaves every edge empty and changes nothing else (data is drawn last)."""
    wf0 = generate_workflow("random", 100, 2, ccr=0.0)
    wf1 = generate_workflow("random", 100, 2, ccr=1.0)
    assert all(e.data == 0 for e in wf0.edges)
    assert [(e.src, e.dst) for e in wf0.edges] == [(e.src, e.dst) for e in wf1.edges]
    assert [t.model_dump() for t in wf0.tasks] == [t.model_dump() for t in wf1.tasks]
