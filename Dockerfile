# syntax=docker/dockerfile:1
# The dagsched service image (docs/deploy.md): CPU torch, the locked dependencies, the package with its shipped
# policy (package data under src/dagsched/data/models/), a non-root user, and a root filesystem that may be
# mounted read-only: everything the process writes goes under /var/cache/dagsched (numba's compiled kernels)
# and /var/lib/dagsched (uploaded policies, a SQLite store when no PostgreSQL is given), volumes in compose and
# emptyDirs in Kubernetes.
#
#   docker build -t dagsched:0.1.0 .
#   docker run --rm -p 8080:8080 -e DAGSCHED_API_TOKEN=change-me dagsched:0.1.0
#
# Checked without a Docker engine by `make deploy-check` (dockerfile-parse, checkov, tests/deploy/test_container.py).

# ---- build: a virtual environment at the path it keeps in the runtime stage ----
FROM python:3.11-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /src
# as the Makefile's $(STAMP) rule: torch first and pinned, here the CPU wheel from PyTorch's CPU index and without
# its dependencies (the lock pins them), so nothing pulls a CUDA build; then the lock; then the package, no deps
RUN pip install --no-deps --index-url https://download.pytorch.org/whl/cpu torch==2.13.0
COPY requirements.lock ./
RUN pip install -r requirements.lock
COPY pyproject.toml README.md ./
COPY src/ ./src/
RUN pip install --no-deps . \
 && python -c "import dagsched.policy as p; assert p.shipped_model_path().with_suffix('.safetensors').is_file()"

# ---- runtime ----
FROM python:3.11-slim-bookworm
LABEL org.opencontainers.image.title="dagsched" \
      org.opencontainers.image.description="Schedules DAG workflows onto heterogeneous nodes: the scheduling service" \
      org.opencontainers.image.licenses="Apache-2.0"
RUN groupadd --system --gid 10001 dagsched \
 && useradd --system --uid 10001 --gid dagsched --home-dir /var/lib/dagsched --no-create-home \
      --shell /usr/sbin/nologin dagsched \
 && mkdir -p /var/cache/dagsched/numba /var/lib/dagsched/models \
 && chown -R dagsched:dagsched /var/cache/dagsched /var/lib/dagsched
COPY --from=build /opt/venv /opt/venv
# NUMBA_CACHE_DIR: numba writes its compiled kernels beside the package by default, which a read-only root
# filesystem forbids. DAGSCHED_MODEL_DIR: where uploaded policies are kept. DAGSCHED_STORE_URL: SQLite on the
# volume unless PostgreSQL is given (several replicas need PostgreSQL: they share what they serve through it).
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    NUMBA_CACHE_DIR=/var/cache/dagsched/numba \
    DAGSCHED_MODEL_DIR=/var/lib/dagsched/models \
    DAGSCHED_STORE_URL=sqlite:////var/lib/dagsched/service.sqlite \
    DAGSCHED_ENVIRONMENT=prod
USER 10001:10001
WORKDIR /var/lib/dagsched
# compile the inference and simulator kernels into the image's cache now (about 25 s here): a process that starts
# on an empty cache compiles them itself (ready after 24 s instead of 6 s on the 2-core machine, and about 150 MiB
# more RSS). A volume mounted on /var/cache/dagsched starts with this content in compose (a named volume copies
# the image's files); the Kubernetes Deployment copies it into its emptyDir with an init container.
RUN python -c "from dagsched.policy import shipped_model_path; from dagsched.policy.files import load_policy; \
from dagsched.policy.inference import warm_up; warm_up(load_policy(shipped_model_path()))"
VOLUME ["/var/cache/dagsched", "/var/lib/dagsched"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=4)"]
# the command docs/deploy.md ("Deploy") documents; the store URL comes from DAGSCHED_STORE_URL (the same setting as
# --store, kept out of the process list), the bearer token from DAGSCHED_API_TOKEN
CMD ["dagsched", "serve", "--host", "0.0.0.0", "--port", "8080"]
