# Every target sets up .venv from the lock when it is missing or stale.
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
PYTHON ?= $(shell command -v python3.11 || command -v python3)

.PHONY: run serve quick test lint bench bench-standard bench-shared perf clean

$(STAMP): requirements.lock pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# torch first and pinned: it keeps any other package from pulling a CUDA build
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -r requirements.lock
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

# the product's main job: the scheduling service on localhost:8080 with the shipped model and a
# SQLite store, and a demo client that fills it with plans, decisions and metrics (Ctrl-C stops it)
run: serve

serve: $(STAMP)
	mkdir -p results
	DAGSCHED_API_TOKEN=$${DAGSCHED_API_TOKEN:-dev-token} $(VENV)/bin/dagsched serve --host 127.0.0.1 --port 8080 \
	  --store sqlite:///results/service.sqlite & pid=$$!; trap "kill $$pid" EXIT INT TERM; \
	  $(PY) -m dagsched.service.demo --url http://127.0.0.1:8080 --count 40; wait $$pid

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks
	$(VENV)/bin/mypy

test: lint
	$(PY) -m pytest -n 2

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

# streams of workflows on a loaded shared cluster (docs/shared-cluster.md); the whole grid is about 21 hours on two
# cores: SHARED_ARGS="--clusters hetero-16,homog-8 --seeds 1,2" runs the slice the committed report shows (about 1.5 h)
SHARED_ARGS ?=
bench-shared: $(STAMP)
	$(VENV)/bin/dagsched bench --suite shared --out results/shared $(SHARED_ARGS)
	$(VENV)/bin/dagsched report results/shared --out docs/results/shared --readme README.md \
	  --title "shared cluster under load" --command "make bench-shared $(if $(SHARED_ARGS),SHARED_ARGS='$(SHARED_ARGS)')"

# performance figures (they print; nothing is asserted on time)
perf: $(STAMP)
	for f in benchmarks/bench_*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
