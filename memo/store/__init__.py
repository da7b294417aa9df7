"""SQLite store: connection factory, migrations, canonical writes and derived indexes."""
