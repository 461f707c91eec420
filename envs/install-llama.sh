#!/bin/sh
# Install llama-cpp-python (the embedded engine's server) built for a portable x86-64 baseline.
#
# Why: llama-cpp-python is an sdist; its default build uses -march=native, and on a CPU that
# advertises AMX (Sapphire Rapids and later) ggml then runs AMX tile instructions, which some
# virtual machines do not enable: the process dies with SIGILL on the first long prompt. The
# baseline here is AVX2 + FMA + F16C (any x86-64 CPU since 2013); on other architectures the
# default build is used. The wheel is cached in a pip cache of its own, so a wheel built
# natively earlier (in pip's default cache) is never picked up, and later installs reuse this one.
#
# Usage: sh envs/install-llama.sh [pip install options]      (into the active environment)
#        LLAMA_PIP=wheel sh envs/install-llama.sh -w DIR     (a wheel, e.g. for the image build)
set -eu
VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
case "$(uname -m)" in
  x86_64|amd64)
    export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
    export PIP_CACHE_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/pip-llama-avx2"
    ;;
esac
exec python -m pip "${LLAMA_PIP:-install}" --no-deps "$@" "llama-cpp-python==${VERSION}"
