"""How many examples a property test draws: ``@settings(max_examples=examples(300))``
(``from tests.fast_examples import examples``).

The full suite (./scripts/test.sh; hypothesis's default profile) draws each test's own
count.  The fast path for the people who change the code (./scripts/test.sh --fast, which
passes ``--hypothesis-profile=fast``; the profile is registered in tests/conftest.py) draws
a tenth of it, at least ``FAST_FLOOR``.  Every example asserts the same on both paths; the
fast path only draws fewer of them (issue 27.6).

A count written as a plain number (not through ``examples``) is drawn in full on both paths:
hypothesis lets an explicit ``max_examples`` override the loaded profile.
"""

from __future__ import annotations

from hypothesis import settings
from hypothesis.errors import InvalidArgument

FAST_PROFILE = "fast"
FAST_DIVISOR = 10
FAST_FLOOR = 5


def fast() -> bool:
    """True when the fast profile is the loaded one (``--hypothesis-profile=fast``)."""
    try:
        return settings.default is settings.get_profile(FAST_PROFILE)
    except InvalidArgument:         # not registered: not run under tests/conftest.py
        return False


def examples(n: int) -> int:
    """``n`` on the full suite; ``n // FAST_DIVISOR`` (at least ``FAST_FLOOR``, at most
    ``n``) under the fast profile."""
    return min(n, max(FAST_FLOOR, n // FAST_DIVISOR)) if fast() else n
