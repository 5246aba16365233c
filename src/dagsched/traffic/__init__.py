"""Traffic for a running scheduling service, from outside it: the demo client that fills it with plans
(`traffic.demo`, what `make run` starts beside the service) and a simulated cluster that runs its plans on true
runtimes differing from what the requests declare and reports what happened (`traffic.simulated_cluster`, for the
calibration, canary and fine-tuning tests and benchmarks).
"""
