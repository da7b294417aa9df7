"""Pickling frozen slots dataclasses as their constructor's arguments.

``dataclass(slots=True)`` pickles an instance through a generated ``__setstate__`` that
calls ``dataclasses.fields`` and ``object.__setattr__`` field by field in Python: an import's
prepared records (``memo.ops.prepare_pool``), sent from worker processes by the thousand,
took about as long to unpickle as to insert.  ``by_fields`` makes ``pickle`` (and ``copy``)
rebuild an instance with one call of the class, about half the time both ways.
"""

from __future__ import annotations

from dataclasses import fields
from typing import TypeVar

T = TypeVar("T")


def by_fields(cls: type[T]) -> type[T]:
    """Class decorator, outside ``@dataclass``: ``cls`` pickles as ``cls(*its fields)``
    (every field must be an ``__init__`` argument, so the call rebuilds it whole)."""
    all_fields = fields(cls)  # type: ignore[arg-type]
    if any(not f.init for f in all_fields):
        raise TypeError(f"{cls.__name__}: a field outside __init__ cannot be rebuilt by a call")
    names = tuple(f.name for f in all_fields)

    def __reduce__(self: T) -> tuple[type[T], tuple[object, ...]]:
        return cls, tuple(getattr(self, n) for n in names)

    cls.__reduce__ = __reduce__  # type: ignore[assignment,method-assign]
    return cls
