#!/usr/bin/env bash
# Run memo's whole test suite, slow tests included (README: "Run the tests"), then the fast
# quality regression (`memo eval regress --fast`: the bundled sample, hybrid with the shipped
# model, every arm of the default profile, against eval/expected/sample.toml).  Creates or
# refreshes .venv when needed (pip install -e ".[dev]")
# and installs the Debian package chromium when missing (the web UI test drives it; only
# chromium, --no-install-recommends, never an upgrade of other packages: scripts/_chromium.sh).
# Extra arguments go to pytest (e.g. ./scripts/test.sh -m "not slow" for the quick suite);
# with extra arguments the regression step is skipped.
# Exits non-zero when any test fails, when no test ran at all (pytest exit 5), or when a
# regression metric falls below its tolerance.
set -uo pipefail
cd "$(dirname "$0")/.."
_t0=$SECONDS
if [ "$#" -eq 0 ]; then
  cat >&2 <<'MSG'
test.sh: the whole suite, slow tests included.  On 2 cores expect about 30 minutes the first
  time (embedding SciFact's 5,183 abstracts alone is about 12 minutes; the wheel-install
  test downloads memo's dependencies into a fresh venv) and about 15 minutes afterwards
  (vectors cached in .cache/memo-eval).  Long steps print a line every 30 s.
  Quick suite (a few minutes): ./scripts/test.sh -m "not slow"
MSG
fi
source scripts/_venv.sh dev
source scripts/_chromium.sh

# The PostgreSQL half of the backend-parametrised tests must run here, never skip.
MEMO_REQUIRE_POSTGRES=1 .venv/bin/python -m pytest "$@"
rc=$?
echo "test.sh: pytest took $(( (SECONDS - _t0) / 60 )) min $(( (SECONDS - _t0) % 60 )) s (exit $rc)" >&2
if [ "$rc" -eq 5 ]; then
  echo "test.sh: no tests were collected or run (pytest exit 5); failing" >&2
  exit 1
fi
if [ "$rc" -ne 0 ] || [ "$#" -gt 0 ]; then
  exit "$rc"
fi
echo "== fast quality regression: memo eval regress --fast" >&2
.venv/bin/memo eval regress --fast --quiet
