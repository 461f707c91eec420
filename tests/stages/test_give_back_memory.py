"""``give_back_memory`` returns freed heap pages to the operating system: the RSS that
``/usr/bin/time`` and a cluster's memory limit see drops, where without it freed blocks below
a live one stay resident (what publish's steps left behind at ten million rows)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

_GLIBC = hasattr(os, "confstr") and "CS_GNU_LIBC_VERSION" in os.confstr_names

_SCRIPT = textwrap.dedent(
    """
    import sys
    from sealedeval.store.arrow import give_back_memory

    def rss():
        return int(open("/proc/self/statm").read().split()[1]) * 4096 >> 20

    first = bytearray(4 << 20)
    del first  # glibc raises its mmap threshold: later blocks of this size come from the heap
    blocks = [bytearray(4 << 20) for _ in range(60)]
    for b in blocks:
        b[::4096] = b"x" * len(b[::4096])  # touched: resident
    pin = bytearray(64 << 10)  # a live block above them: the heap top cannot shrink
    del blocks
    before = rss()
    if sys.argv[1] == "give-back":
        give_back_memory()
    print(before, rss())
    """
)


@pytest.mark.skipif(not _GLIBC, reason="malloc_trim is glibc's; elsewhere it is a no-op")
def test_freed_heap_memory_leaves_the_process() -> None:
    def run(mode: str) -> tuple[int, int]:
        out = subprocess.run(
            [sys.executable, "-c", _SCRIPT, mode], capture_output=True, text=True, check=True
        ).stdout.split()
        return int(out[0]), int(out[1])

    kept_before, kept_after = run("keep")
    if kept_before < 200 or kept_after < kept_before - 200:
        pytest.skip("this C library gives freed blocks back by itself: nothing to show")
    before, after = run("give-back")
    assert before > 200  # the freed blocks were still resident
    assert after < before - 200  # give_back_memory gives them back
