"""Compact read-only columns: what the stages hold per row at millions of rows.

A Python list holds an 8-byte pointer per row and, for a request key, a ~80-byte ``str`` object
per row: ten million latest raw rows were ~1 GB of keys and ~80 MB per other column read
(``benchmarks/scale.py --n 10000000``). These columns hold one small code per row into the
distinct values (``Coded``), or a key's bytes (``HexKeys``), and make the Python value when a
row is read. They are ``Sequence``s: code that indexes or iterates a list works unchanged;
code that wants the list makes one.
"""

from __future__ import annotations

import functools
import re
from array import array
from collections.abc import Iterator, Sequence
from typing import Any

_NARROW = (("B", 1 << 8), ("H", 1 << 16), ("I", 1 << 32))
"""Unsigned code widths, narrowest first, with how many distinct values each can code."""


def code_array(codes: Any, n_values: int) -> array[int]:
    """Codes (a numpy integer array, values below ``n_values``) in the narrowest unsigned
    ``array`` type that holds them: one byte a row for up to 256 distinct values."""
    import numpy as np

    for typecode, limit in _NARROW:
        if n_values <= limit:
            out: array[int] = array(typecode)
            out.frombytes(as_bytes(np.ascontiguousarray(codes, dtype=_DT[typecode])))
            return out
    raise ValueError(f"{n_values} distinct values: too many to code")


def as_bytes(values: Any) -> memoryview:
    """A contiguous numpy array's bytes, no copy: what ``array.frombytes`` takes (``tobytes``
    made a second copy of columns of tens of millions of rows)."""
    import numpy as np

    flat: memoryview = np.ascontiguousarray(values).reshape(-1).view(np.uint8).data
    return flat


_DT = {"B": "u1", "H": "u2", "I": "u4", "L": "u8", "Q": "u8"}
"""numpy's name for each unsigned ``array`` type (numpy is imported where a column is used:
the CLI's start-up does not pay for it)."""


def codes_view(codes: array[int]) -> Any:
    """An ``array`` of codes as a numpy array (no copy)."""
    import numpy as np

    return np.frombuffer(codes, dtype=np.dtype(_DT[codes.typecode]))


_EQ_STEP = 1 << 16
"""Rows per slice ``Coded.__eq__`` compares."""


class Coded(Sequence[Any]):
    """A column as one code per row (an unsigned ``array``: 1, 2 or 4 bytes) into its values.

    The values need not be distinct, and may be a column themselves: a graded table's identity
    columns are the raw columns, indexed by each graded row's raw row
    (``stages.grade.GradedTable``). Reading a cell is one index more than a list."""

    __slots__ = ("codes", "values")

    def __init__(self, codes: array[int], values: Sequence[Any]) -> None:
        self.codes = codes
        self.values = values

    def __getitem__(self, i: Any) -> Any:
        try:
            return self.values[self.codes[i]]
        except TypeError:  # a slice: codes[i] is an array, not an index
            if not isinstance(i, slice):
                raise
            return [self.values[c] for c in self.codes[i]]

    def __len__(self) -> int:
        return len(self.codes)

    def __iter__(self) -> Iterator[Any]:
        return map(self.values.__getitem__, self.codes)

    def __eq__(self, other: object) -> bool:
        """Equal to any sequence of the same values, compared a slice at a time (the audit
        compares 40 million graded rows per column: as whole lists, ~3 GB of key strings)."""
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        if len(other) != len(self):
            return False
        if isinstance(other, Coded) and other.codes is self.codes and other.values is self.values:
            return True
        return all(
            self[s : s + _EQ_STEP] == list(other[s : s + _EQ_STEP])
            for s in range(0, len(self), _EQ_STEP)
        )

    __hash__ = None  # type: ignore[assignment]

    def code_view(self) -> Any:
        """The codes as a numpy array (no copy)."""
        return codes_view(self.codes)

    def taken(self, order: Any) -> Coded:
        """The column in ``order`` (numpy integer positions)."""
        out: array[int] = array(self.codes.typecode)
        out.frombytes(as_bytes(self.code_view()[order]))
        return Coded(out, self.values)


def at_positions(column: Sequence[Any], positions: array[int]) -> Sequence[Any]:
    """The values of ``column`` at ``positions`` (a ``RowsAt`` view's), without a Python
    object per row: a coded column's codes taken there, else a view coding into the column
    itself (do not change it)."""
    if isinstance(column, Coded):
        return column.taken(codes_view(positions))
    return Coded(positions, column)


@functools.cache
def _digit_values() -> Any:
    """Byte → value of a lowercase hex digit, 255 for every other byte."""
    import numpy as np

    table = np.full(256, 255, dtype=np.uint8)
    for value, char in enumerate(b"0123456789abcdef"):
        table[char] = value
    return table


def hex_packed(arr: Any) -> Any | None:
    """An Arrow string array's values as bytes, a row of ``width // 2`` per value (numpy
    ``uint8``, shape (rows, width // 2)), when every value is ``width`` lowercase hex digits
    (the same positive even width for all; no nulls). Else None. What ``HexKeys`` holds."""
    import numpy as np
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.null_count or not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        return None
    n = len(arr)
    if n == 0:
        return None
    off_type = np.dtype(np.int32 if pa.types.is_string(arr.type) else np.int64)
    _, off_buf, data_buf = arr.buffers()
    offs = np.frombuffer(
        off_buf, dtype=off_type, count=n + 1, offset=arr.offset * off_type.itemsize
    )
    width = int(offs[1] - offs[0])
    if width == 0 or width % 2 or np.any(np.diff(offs) != width):
        return None
    digits = _digit_values()[
        np.frombuffer(data_buf, dtype=np.uint8, count=n * width, offset=int(offs[0]))
    ].reshape(n, width)
    if digits.max() > 15:
        return None
    return np.ascontiguousarray((digits[:, 0::2] << 4) | digits[:, 1::2])


@functools.cache
def _hex_digits() -> Any:
    import numpy as np

    return np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


class HexKeys(Sequence[str]):
    """Keys of one width of lowercase hex digits, held as their bytes: 16 bytes a 32-digit
    request key instead of a pointer and an ~80-byte ``str`` (1 GB at ten million rows).

    ``packed`` is a 2-d numpy ``uint8`` array, a row per key. Byte order is digit order, so
    comparing rows as bytes orders them as their strings (``ranks``)."""

    __slots__ = ("_b", "_n", "_w", "packed")

    def __init__(self, packed: Any) -> None:
        import numpy as np

        self.packed = np.ascontiguousarray(packed, dtype=np.uint8)  # no copy when it is
        self._n, self._w = int(self.packed.shape[0]), int(self.packed.shape[1])
        flat: memoryview = self.packed.reshape(-1).data
        self._b = flat  # a slice of it spells a key (``hex()``)

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("key index out of range")
        w = self._w
        return self._b[i * w : i * w + w].hex()

    def __iter__(self) -> Iterator[str]:
        b, w = self._b, self._w
        return (b[s : s + w].hex() for s in range(0, len(b), w))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, HexKeys):
            return self._n == other._n and self._w == other._w and self._b == other._b
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def ranks(self) -> Any:
        """Each key's rank among the distinct keys in string order (numpy int32)."""
        import numpy as np

        rows = self.packed.view(np.dtype((np.void, self._w))).ravel()
        _, inverse = np.unique(rows, return_inverse=True)
        return inverse.astype(np.int32).ravel()

    def hex_chars(self, at: Any) -> tuple[Any, int]:
        """The keys at positions ``at`` as one buffer of hex digits (``uint8``) and the
        digits per key: what an Arrow string array of them is built from."""
        import numpy as np

        hexd = _hex_digits()
        sub = self.packed[at]
        chars = np.empty((len(sub), 2 * self._w), dtype=np.uint8)
        chars[:, 0::2] = hexd[sub >> 4]
        chars[:, 1::2] = hexd[sub & 15]
        return chars.ravel(), 2 * self._w

    def arrow(self, at: Any) -> Any:
        """The keys at positions ``at`` as an Arrow ``large_string`` array, spelled from their
        bytes (no Python string per key): what the graded file and the scorecard write."""
        import numpy as np
        import pyarrow as pa

        chars, width = self.hex_chars(at)
        offsets = np.arange(len(at) + 1, dtype=np.int64) * width
        buffers = [None, pa.py_buffer(offsets), pa.py_buffer(chars)]
        return pa.Array.from_buffers(pa.large_string(), len(at), buffers)


class KeyIndex:
    """Where keys stand among a column of hex keys (``HexKeys``): the column's bytes sorted
    once, then each lookup a binary search. A dict of ten million request keys held ~1 GB;
    this holds the sorted bytes and their positions (24 bytes a 32-digit key)."""

    __slots__ = ("_order", "_sorted", "_void", "_w")

    def __init__(self, keys: HexKeys) -> None:
        import numpy as np

        self._w = keys.packed.shape[1]
        self._void = np.dtype((np.void, max(self._w, 1)))
        rows = keys.packed.view(self._void).ravel() if len(keys) else np.zeros(0, self._void)
        self._order = np.argsort(rows, kind="stable")  # equal keys: the first one's position
        self._sorted = rows[self._order]

    def find(self, values: Sequence[Any]) -> Any:
        """Each value's position in the column (numpy ``int64``; the first where a key is
        there twice), -1 where it is not there: ``HexKeys`` by their bytes, other values
        (strings) by theirs when they spell a key of the column's width, else -1."""
        import numpy as np

        if isinstance(values, HexKeys):
            if values.packed.shape[1] != self._w:
                return np.full(len(values), -1, dtype=np.int64)
            return self._at(values.packed)
        out = np.full(len(values), -1, dtype=np.int64)
        at, packed = spelled_keys(values, self._w)
        if len(at):
            out[at] = self._at(packed)
        return out

    def _at(self, packed: Any) -> Any:
        import numpy as np

        if not len(self._sorted) or not len(packed) or not self._w:
            return np.full(len(packed), -1, dtype=np.int64)
        wanted = np.ascontiguousarray(packed, dtype=np.uint8).view(self._void).ravel()
        at = np.minimum(np.searchsorted(self._sorted, wanted), len(self._sorted) - 1)
        return np.where(self._sorted[at] == wanted, self._order[at], -1).astype(np.int64)


_LOWER_HEX = re.compile("[0-9a-f]+")


def spelled_keys(values: Sequence[Any], width: int) -> tuple[Any, Any]:
    """The values that spell a key of ``width`` bytes (strings of lowercase hex digits): their
    positions (numpy int64) and their bytes (``HexKeys.packed``: a row each)."""
    import numpy as np

    spelled = [
        (i, bytes.fromhex(v))
        for i, v in enumerate(values)
        if type(v) is str and len(v) == 2 * width and _LOWER_HEX.fullmatch(v)
    ]
    at = np.fromiter((i for i, _ in spelled), dtype=np.int64, count=len(spelled))
    packed = np.frombuffer(b"".join(b for _, b in spelled), dtype=np.uint8)
    return at, packed.reshape(len(spelled), width)
