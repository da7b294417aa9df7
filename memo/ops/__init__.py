"""Library operations behind the CLI: each takes a connection, returns a frozen report."""

from memo.ops.add import add_record
from memo.ops.importer import ImportOptions, import_path
from memo.ops.maintenance import backup, reindex, stats
from memo.ops.records import ListFilter, forget, get, list_records, purge, supersede
from memo.ops.restore import restore

__all__ = ["ImportOptions", "ListFilter", "add_record", "backup", "forget", "get", "import_path",
           "list_records", "purge", "reindex", "restore", "stats", "supersede"]
