"""The temporary name a file is written under before it is renamed into place (the graph
and vector sidecars beside a database): hidden, naming the writing process, so a reader of
the folder (``memo eval cache``) tells a write in progress from one a killed process left."""

from __future__ import annotations

import os
import re
from pathlib import Path

TEMP_PID = re.compile(r"\.tmp-(\d+)-[0-9a-f]{8}$")   # the writer's pid, in a name ``temp_beside`` made


def temp_beside(path: Path) -> Path:
    """A fresh hidden name in ``path``'s folder (same file system: ``os.replace`` is atomic)."""
    return path.with_name(f".{path.name}.tmp-{os.getpid()}-{os.urandom(4).hex()}")
