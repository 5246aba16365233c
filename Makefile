# Every target sets up .venv from the lock when it is missing or stale.
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
PYTHON ?= $(shell command -v python3.11 || command -v python3)

.PHONY: run test lint bench clean

$(STAMP): requirements.lock pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# torch first and pinned: it keeps any other package from pulling a CUDA build
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -r requirements.lock
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/dagsched compare --workflow ../shared/data/wfinstances/montage/montage-chameleon-2mass-015d-001.json.gz --cluster hetero-16 --seeds 3

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks
	$(VENV)/bin/mypy

test: lint
	$(PY) -m pytest -n 2

bench: $(STAMP)
	for f in benchmarks/bench_*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
