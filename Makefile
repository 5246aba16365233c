# Every target sets up .venv from the lock when it is missing or stale.
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
PYTHON ?= $(shell command -v python3.11 || command -v python3)

.PHONY: run serve quick test lint bench bench-standard bench-shared perf clean deploy-check grpc-stubs

$(STAMP): requirements.lock pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# torch first and pinned: it keeps any other package from pulling a CUDA build
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -r requirements.lock
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

# the product's main job: the scheduling service on localhost:8080 (HTTP) and localhost:50051 (gRPC) with the shipped
# model and a SQLite store, and a demo client that fills it with plans, decisions, executed runs and metrics (Ctrl-C
# or SIGTERM stops both, and the recipe ends with status 0); `make run PORT=8081 GRPC_PORT=50052` where those ports
# are taken
PORT ?= 8080
GRPC_PORT ?= 50051
run: serve

serve: $(STAMP)
	mkdir -p results
	export DAGSCHED_API_TOKEN=$${DAGSCHED_API_TOKEN:-dev-token}; \
	  $(VENV)/bin/dagsched serve --host 127.0.0.1 --port $(PORT) \
	  --grpc-port $(GRPC_PORT) --store sqlite:///results/service.sqlite --report-dir docs/results/standard-hetero-16 & pid=$$!; \
	  trap 'kill $$pid 2>/dev/null' EXIT; trap 'kill $$pid 2>/dev/null; wait $$pid 2>/dev/null; exit 0' INT TERM; \
	  $(PY) -m dagsched.traffic.demo --url http://127.0.0.1:$(PORT) --count 40; wait $$pid

# the gRPC service's Python stubs, committed beside their .proto (tests/service/test_grpc.py checks they match it)
GRPC_PROTO := src/dagsched/service/rpc/dagsched.proto
grpc-stubs: $(STAMP)
	$(PY) -m grpc_tools.protoc -I src --python_out=src --pyi_out=src --grpc_python_out=src $(GRPC_PROTO)

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks
	$(VENV)/bin/mypy

test: lint
	$(PY) -m pytest -n 2 --dist loadgroup

# the quick benchmark of every registered scheduler (a few minutes; real traces included) and its table
quick: $(STAMP)
	$(VENV)/bin/dagsched bench --suite quick --out results/quick

# the standard and shared suites (hours on one machine; each resumes where it stopped), their reports in
# docs/results/ (report.md and figures are committed; report.html, the same page self-contained, is not) and
# README's tables
bench: bench-standard bench-shared

bench-standard: $(STAMP)
	$(VENV)/bin/dagsched bench --suite standard --out results/standard
	$(VENV)/bin/dagsched report results/standard --out docs/results/standard --readme README.md --command "make bench"

# streams of workflows on a loaded shared cluster (docs/shared-cluster.md); the whole grid is more than 24 hours on two
# cores (48 core-hours for 21 schedulers, 28 run; Ray: --address): SHARED_ARGS="--clusters hetero-16,homog-8 --loads 0.85 --schedulers
# fair,srpt_hold,kube_default,heft,drl_stream,fair_cap,srpt_cap,srpt_admit,drl_stream_levers,srpt_local,fair_cap_local"
# runs the slice the committed report shows (660 runs, about 3 hours of cell time)
SHARED_ARGS ?=
bench-shared: $(STAMP)
	$(VENV)/bin/dagsched bench --suite shared --out results/shared $(SHARED_ARGS)
	$(VENV)/bin/dagsched report results/shared --out docs/results/shared --readme README.md \
	  --title "shared cluster under load" --command "make bench-shared $(if $(SHARED_ARGS),SHARED_ARGS='$(SHARED_ARGS)')"

# performance figures (they print; nothing is asserted on time)
perf: $(STAMP)
	for f in benchmarks/bench_*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

# the deploy checks' tools (checkov, kubernetes-validate, dockerfile-parse) in a venv of their own, from their own
# lock: their pins need not agree with requirements.lock
DEPLOY_VENV := .venv-deploy
DEPLOY_STAMP := $(DEPLOY_VENV)/.installed-stamp
K8S_VERSION := 1.33.0
DEPLOY_OUT := build/deploy

$(DEPLOY_STAMP): deploy/requirements-deploy.lock
	test -x $(DEPLOY_VENV)/bin/python || $(PYTHON) -m venv $(DEPLOY_VENV)
	$(DEPLOY_VENV)/bin/python -m pip install --quiet -r deploy/requirements-deploy.lock
	touch $(DEPLOY_STAMP)

# the image, the Kubernetes manifests, the compose file and the RayCluster, checked without a Docker engine or a
# cluster (docs/deploy.md): render every kustomization, validate every object against Kubernetes $(K8S_VERSION)
# (strict: unknown fields fail), scan with checkov (findings kept are skipped in place, with the reason), then the
# tests of tests/deploy/, which may not skip here
deploy-check: $(STAMP) $(DEPLOY_STAMP)
	@command -v kubectl >/dev/null || { echo "deploy-check: kubectl not found (Debian: apt-get install kubernetes-client)"; exit 1; }
	mkdir -p $(DEPLOY_OUT)
	for k in base overlays/dev overlays/prod ray; do \
	  kubectl kustomize deploy/k8s/$$k > $(DEPLOY_OUT)/$$(basename $$k).yaml || exit 1; done
	# ray.yaml is a RayCluster (a CRD kubernetes-validate does not know): tests/deploy/test_k8s.py checks it
	$(DEPLOY_VENV)/bin/kubernetes-validate --kubernetes-version $(K8S_VERSION) --strict --quiet \
	  $(DEPLOY_OUT)/base.yaml $(DEPLOY_OUT)/dev.yaml $(DEPLOY_OUT)/prod.yaml
	$(DEPLOY_VENV)/bin/checkov --config-file .checkov.yaml --quiet --compact --framework dockerfile kubernetes \
	  -f Dockerfile $(DEPLOY_OUT)/base.yaml $(DEPLOY_OUT)/dev.yaml $(DEPLOY_OUT)/prod.yaml $(DEPLOY_OUT)/ray.yaml
	# checkov has no Compose policies: its secrets scan covers compose.yaml and every other deploy file
	$(DEPLOY_VENV)/bin/checkov --config-file .checkov.yaml --quiet --compact --framework secrets \
	  -d deploy -f Dockerfile
	DAGSCHED_DEPLOY_CHECK=1 $(PY) -m pytest -p no:xdist -q tests/deploy/test_container.py tests/deploy/test_k8s.py \
	  tests/deploy/test_compose.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
