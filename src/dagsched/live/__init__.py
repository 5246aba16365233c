"""Real runs: workflows executed on a Ray cluster, decided live by any registered scheduler.

The simulator's engine runs here on the wall clock (`engine.LiveEngine`): the same state, handlers and decision
point, with events (task ends, failures, lost nodes) coming from the executor on Ray (`executor`) instead of the
simulated heap, and workflow arrivals and wake-ups due at wall-clock instants. `cluster` starts a loopback Ray
cluster shaped like a dagsched cluster or joins one; `worker` is what runs on its nodes; `run` drives a whole run
(and Ray's own scheduler, the baseline); `cli` is `dagsched run`.
"""
