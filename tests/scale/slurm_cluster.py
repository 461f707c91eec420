"""A throwaway single-node SLURM cluster (Debian's slurm-wlm + munge) for the cluster test.

``SlurmCluster(tmp)`` owns every daemon it needs and nothing else: a private ``munged``
(its own key, socket, pid and seed files under ``tmp``; slurm.conf points at it with
``AuthInfo=socket=``), then ``slurmctld`` and ``slurmd``, all in the foreground as child
processes that die with the test process (``PR_SET_PDEATHSIG``). The generated ``slurm.conf``
uses free ports, its own state/spool/log directories, no accounting, no cgroups
(``proctrack/linuxproc``, ``task/none``) and the configured node size rather than the probed one
(``config_overrides``: containers report host memory and CPUs). Clients find the cluster through
``SLURM_CONF`` (``.env``).

Snakemake's SLURM job step strips ``SLURM_*`` from the environment of the ``srun`` it runs
inside each job, so that ``srun`` only finds the default ``/etc/slurm/slurm.conf``: while the
cluster runs, that path is a symlink to the generated file, removed on ``stop()``. A site
config already there is never touched (``unavailable()`` names it and the test skips).

``stop()`` cancels the jobs, ends the daemons it started, then ends the processes they left
(job processes carry this cluster's ``SLURM_CONF``, job steps hold its slurmd log open), so a
failed run leaves nothing behind; ``leftovers()`` lists any such process. If the test process
is killed outright, the daemons die with it; the link and the job processes it leaves are
cleared by the next ``start()`` (the generated config is marked, so a site config never is).

Needs root and ``apt-get install -y slurm-wlm munge``; ``unavailable()`` says why not.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import psutil

BINARIES = (
    "slurmctld",
    "slurmd",
    "munged",
    "sbatch",
    "squeue",
    "sinfo",
    "srun",
    "scancel",
    "scontrol",
)
SITE_CONF = Path("/etc/slurm/slurm.conf")
MARKER = "# sealedeval throwaway test cluster (tests/scale/slurm_cluster.py)"
_PR_SET_PDEATHSIG = 1


def _stale_cluster() -> SlurmCluster | None:
    """The cluster behind a ``SITE_CONF`` link left by a test process that was killed (its
    daemons died with it): the link dangles, or points at a generated config whose slurmctld
    is gone. None for a site config or a test cluster that is still running."""
    if not SITE_CONF.is_symlink():
        return None
    target = Path(os.readlink(SITE_CONF))
    old = SlurmCluster(target.parent)
    if target.exists():
        if not target.read_text(errors="replace").startswith(MARKER):
            return None
        with contextlib.suppress(OSError, ValueError, psutil.Error):
            pid = int((target.parent / "slurmctld.pid").read_text())
            if psutil.Process(pid).name() == "slurmctld":
                return None
    return old


def unavailable() -> str | None:
    """Why this machine cannot host the throwaway cluster, or None."""
    missing = [b for b in BINARIES if shutil.which(b) is None]
    if missing:
        return (
            f"SLURM not installed (missing {', '.join(missing)}): "
            "apt-get install -y slurm-wlm munge"
        )
    if os.geteuid() != 0:
        return "starting slurmd needs root"
    if (SITE_CONF.exists() or SITE_CONF.is_symlink()) and _stale_cluster() is None:
        return f"{SITE_CONF} exists: not starting a test cluster over a site config"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    """Runs in the child before exec: SIGTERM it when the test process dies (even by kill -9)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _mem_mb() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return max(1024, int(line.split()[1]) // 1024 - 512)
    return 1024


class SlurmCluster:
    def __init__(self, base: Path, *, cpus: int | None = None) -> None:
        self.base = base
        self.host = socket.gethostname().split(".")[0]
        self.cpus = cpus or os.cpu_count() or 1
        self.procs: list[subprocess.Popen[bytes]] = []
        self.conf = base / "slurm.conf"
        self.munge_socket = base / "munge" / "munge.sock"
        self.env = os.environ | {"SLURM_CONF": str(self.conf)}
        self._linked: Path | None = None

    def write_conf(self) -> None:
        b = self.base
        for d in ("state", "spool", "log", "munge"):
            (b / d).mkdir(parents=True, exist_ok=True)
        self.conf.write_text(
            "\n".join(
                [
                    MARKER,
                    "ClusterName=sealedeval",
                    f"SlurmctldHost={self.host}(127.0.0.1)",
                    "SlurmUser=root",
                    "SlurmdUser=root",
                    "AuthType=auth/munge",
                    "CredType=cred/munge",
                    f"AuthInfo=socket={self.munge_socket}",
                    f"SlurmctldPort={_free_port()}",
                    f"SlurmdPort={_free_port()}",
                    f"StateSaveLocation={b / 'state'}",
                    f"SlurmdSpoolDir={b / 'spool'}",
                    f"SlurmctldPidFile={b / 'slurmctld.pid'}",
                    f"SlurmdPidFile={b / 'slurmd.pid'}",
                    f"SlurmctldLogFile={b / 'log' / 'slurmctld.log'}",
                    f"SlurmdLogFile={b / 'log' / 'slurmd.log'}",
                    "ProctrackType=proctrack/linuxproc",
                    "TaskPlugin=task/none",
                    "MpiDefault=none",
                    "SchedulerType=sched/backfill",
                    "SelectType=select/cons_tres",
                    "SelectTypeParameters=CR_CPU_Memory",
                    "SlurmdParameters=config_overrides",
                    "ReturnToService=2",
                    # squeue (the executor's status command without accounting) must still see
                    # finished jobs when it polls
                    "MinJobAge=3600",
                    "JobAcctGatherType=jobacct_gather/none",
                    "AccountingStorageType=accounting_storage/none",
                    "SlurmdTimeout=60",
                    f"NodeName={self.host} NodeAddr=127.0.0.1 CPUs={self.cpus} "
                    f"RealMemory={_mem_mb()} State=UNKNOWN",
                    "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
                    "",
                ]
            )
        )

    def _spawn(self, cmd: list[str], log: Path) -> None:
        with open(log, "ab") as out:
            self.procs.append(
                subprocess.Popen(
                    cmd,
                    env=self.env,
                    stdout=out,
                    stderr=out,
                    stdin=subprocess.DEVNULL,
                    preexec_fn=_die_with_parent,
                )
            )

    def _start_munged(self) -> None:
        m = self.base / "munge"
        key = m / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        self._spawn(
            [
                "munged",
                "--foreground",
                "--force",
                f"--socket={self.munge_socket}",
                f"--key-file={key}",
                f"--pid-file={m / 'munged.pid'}",
                f"--seed-file={m / 'munged.seed'}",
                f"--log-file={m / 'munged.log'}",
            ],
            self.base / "log" / "munged.out",
        )
        deadline = time.monotonic() + 10
        while not self.munge_socket.exists():
            if self.procs[-1].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"munged did not start: {self.logs()}")
            time.sleep(0.1)

    def start(self, timeout: float = 60) -> SlurmCluster:
        why = unavailable()
        if why:
            raise RuntimeError(why)
        self.write_conf()
        stale = _stale_cluster()
        if stale is not None:  # a killed test run's link and job processes: clear them first
            stale.reap()
            SITE_CONF.unlink()
        try:
            SITE_CONF.parent.mkdir(parents=True, exist_ok=True)
            SITE_CONF.symlink_to(self.conf)
            self._linked = SITE_CONF
            self._start_munged()
            log = self.base / "log" / "daemons.out"
            self._spawn(["slurmctld", "-D", "-i", "-f", str(self.conf)], log)
            self._spawn(["slurmd", "-D", "-N", self.host, "-f", str(self.conf)], log)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                for p in self.procs:
                    if p.poll() is not None:
                        raise RuntimeError(f"{p.args[0]} exited ({p.returncode}): {self.logs()}")
                out = subprocess.run(
                    ["sinfo", "-h", "-o", "%t"], env=self.env, capture_output=True, text=True
                )
                if out.returncode == 0 and out.stdout.strip() in ("idle", "mix", "alloc"):
                    return self
                time.sleep(0.5)
            raise RuntimeError(f"SLURM node did not come up within {timeout:.0f}s: {self.logs()}")
        except BaseException:
            self.stop()
            raise

    def jobs(self) -> list[dict[str, str]]:
        """Every job the controller remembers (MinJobAge keeps finished ones): id, name,
        state, comment (the executor writes rule and wildcards there)."""
        out = subprocess.run(
            ["squeue", "-h", "-t", "all", "-o", "%i|%j|%T|%k"],
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        keys = ("id", "name", "state", "comment")
        return [
            dict(zip(keys, line.split("|", 3), strict=True))
            for line in out.splitlines()
            if line.strip()
        ]

    def leftovers(self) -> list[psutil.Process]:
        """Processes other than this one started for this cluster: daemons and job processes
        (their environment names its config) and job steps (they hold its slurmd log open)."""
        mine, base = str(self.conf), f"{self.base}/"
        found = []
        for p in psutil.process_iter():
            if p.pid == os.getpid():
                continue
            with contextlib.suppress(psutil.Error):
                if p.environ().get("SLURM_CONF") == mine or (
                    p.name() == "slurmstepd"  # slurmd starts these with a scrubbed environment
                    and any(f.path.startswith(base) for f in p.open_files())
                ):
                    found.append(p)
        return found

    def logs(self) -> str:
        parts = []
        for f in sorted((self.base / "log").glob("*")):
            parts.append(f"--- {f.name}\n" + f.read_text(errors="replace")[-2000:])
        return "\n".join(parts)

    def stop(self) -> None:
        """Cancel the jobs, end the daemons, then anything they left; remove the config link."""
        if self.procs and all(p.poll() is None for p in self.procs):
            with contextlib.suppress(subprocess.SubprocessError, OSError):
                subprocess.run(
                    ["scancel", "--full", "--user", "root"],
                    env=self.env,
                    capture_output=True,
                    timeout=15,
                )
                deadline = time.monotonic() + 15
                while time.monotonic() < deadline and any(
                    j["state"] in ("RUNNING", "COMPLETING", "PENDING", "CONFIGURING")
                    for j in self.jobs()
                ):
                    time.sleep(0.5)
        for p in reversed(self.procs):  # slurmd, slurmctld, then munged
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.procs.clear()
        self.reap()
        if self._linked is not None:
            self._linked.unlink(missing_ok=True)
            self._linked = None

    def reap(self) -> None:
        """End every process left for this cluster (``leftovers``): TERM, then KILL."""
        rest = self.leftovers()
        for p in rest:
            with contextlib.suppress(psutil.Error):
                p.terminate()
        _, alive = psutil.wait_procs(rest, timeout=5)
        for p in alive:
            with contextlib.suppress(psutil.Error):
                p.kill()
        psutil.wait_procs(alive, timeout=5)

    def __enter__(self) -> SlurmCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
