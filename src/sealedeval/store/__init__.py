"""Raw-run store: append-only Parquet parts, resume keys, manifest."""

from sealedeval.store.raw import RawWriter, latest_rows, raw_dir, raw_files, read_raw
from sealedeval.store.schema import RAW_SCHEMA, raw_row

__all__ = ["RAW_SCHEMA", "RawWriter", "latest_rows", "raw_dir", "raw_files", "raw_row", "read_raw"]
