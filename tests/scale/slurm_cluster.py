"""A throwaway single-node SLURM cluster (Debian's slurm-wlm + munge) for the cluster test.

``SlurmCluster(tmp)`` writes a minimal ``slurm.conf`` under ``tmp`` (free ports, its own state,
spool, pid and log files, no accounting), starts ``munged --force`` if munge is not running,
then ``slurmctld -D`` and ``slurmd -D`` as child processes, and waits until ``sinfo`` reports
the node idle. Clients find the cluster through ``SLURM_CONF`` (``.env``). ``stop()`` ends only
the processes it started. Without accounting ``sacct`` cannot answer, so Snakemake's executor
polls with ``squeue`` (``--slurm-status-command squeue``; ``MinJobAge`` keeps finished jobs
visible long enough). Snakemake's SLURM plugin strips ``SLURM_*`` variables inside a job, so
``srun`` there only finds the default ``/etc/slurm/slurm.conf``: when that file does not exist
the cluster links it to the generated one for its lifetime (and removes the link on stop); an
existing site config is never touched (then ``start`` refuses).

Needs root and ``apt-get install -y slurm-wlm munge``; ``unavailable()`` says why not.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

BINARIES = ("slurmctld", "slurmd", "munged", "sbatch", "squeue", "sinfo", "srun")


def unavailable() -> str | None:
    missing = [b for b in BINARIES if shutil.which(b) is None]
    if missing:
        return (f"SLURM not installed (missing {', '.join(missing)}): "
                "apt-get install -y slurm-wlm munge")
    if os.geteuid() != 0:
        return "starting slurmd needs root"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class SlurmCluster:
    def __init__(self, base: Path, *, cpus: int | None = None) -> None:
        self.base = base
        self.host = socket.gethostname().split(".")[0]
        self.cpus = cpus or os.cpu_count() or 1
        self.procs: list[subprocess.Popen[bytes]] = []
        self.conf = base / "slurm.conf"
        self.env = os.environ | {"SLURM_CONF": str(self.conf)}
        self._linked: Path | None = None

    def write_conf(self) -> None:
        b = self.base
        for d in ("state", "spool", "log"):
            (b / d).mkdir(parents=True, exist_ok=True)
        mem = 1024
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem = int(line.split()[1]) // 1024 - 512
        self.conf.write_text(
            "\n".join(
                [
                    "ClusterName=sealedeval",
                    f"SlurmctldHost={self.host}",
                    "SlurmUser=root",
                    "SlurmdUser=root",
                    "AuthType=auth/munge",
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
                    "ReturnToService=2",
                    "MinJobAge=3600",
                    "JobAcctGatherType=jobacct_gather/none",
                    "AccountingStorageType=accounting_storage/none",
                    "SlurmdTimeout=60",
                    f"NodeName={self.host} NodeAddr=127.0.0.1 CPUs={self.cpus} "
                    f"RealMemory={mem} State=UNKNOWN",
                    "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
                    "",
                ]
            )
        )

    def start(self, timeout: float = 60) -> SlurmCluster:
        self.write_conf()
        default = Path("/etc/slurm/slurm.conf")
        if default.exists() or default.is_symlink():
            raise RuntimeError(f"{default} exists: not starting a test cluster over a site config")
        default.parent.mkdir(parents=True, exist_ok=True)
        default.symlink_to(self.conf)
        self._linked = default
        if subprocess.run(["munge", "-n"], capture_output=True).returncode != 0:
            Path("/run/munge").mkdir(parents=True, exist_ok=True)
            shutil.chown("/run/munge", "munge", "munge")
            subprocess.run(["munged", "--force"], check=True, capture_output=True)
        log = open(self.base / "log" / "daemons.out", "ab")  # noqa: SIM115
        for cmd in (["slurmctld", "-D", "-i", "-f", str(self.conf)],
                    ["slurmd", "-D", "-f", str(self.conf)]):
            self.procs.append(subprocess.Popen(cmd, env=self.env, stdout=log, stderr=log))
            time.sleep(1.0)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for p in self.procs:
                if p.poll() is not None:
                    self.stop()
                    raise RuntimeError(f"SLURM daemon exited: {self.logs()}")
            out = subprocess.run(["sinfo", "-h", "-o", "%t"], env=self.env,
                                 capture_output=True, text=True)
            if out.returncode == 0 and out.stdout.strip() in ("idle", "mix", "alloc"):
                return self
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"SLURM node did not come up: {self.logs()}")

    def logs(self) -> str:
        parts = []
        for f in sorted((self.base / "log").glob("*")):
            parts.append(f"--- {f.name}\n" + f.read_text(errors="replace")[-2000:])
        return "\n".join(parts)

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.procs.clear()
        if self._linked is not None:
            self._linked.unlink(missing_ok=True)
            self._linked = None

    def __enter__(self) -> SlurmCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
