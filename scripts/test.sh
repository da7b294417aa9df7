#!/usr/bin/env bash
# Run memo's whole test suite, slow tests included (README: "Run the tests"), then the fast
# quality regression (`memo eval regress --fast`: the bundled sample, hybrid with the shipped
# model, every arm of the default profile, against eval/expected/sample.toml).  Creates or
# refreshes .venv when needed (pip install -e ".[dev]" -e ./eval: memo-kb and its harness)
# and installs the Debian package chromium when missing (the web UI test drives it; only
# chromium, --no-install-recommends, never an upgrade of other packages: scripts/_chromium.sh).
# Extra arguments go to pytest (e.g. ./scripts/test.sh -k fusion); with extra arguments the
# regression step is skipped.
#
#   ./scripts/test.sh --fast [pytest arguments]
# The fast path for the people who change the code (issue 27.6): tests/unit, tests/property
# and tests/golden, under 3 minutes on 2 cores, with neither PostgreSQL nor Chromium.  It
# selects -m "not slow and not postgresql": the PostgreSQL variant of every backend-
# parametrised test (and the modules that use the server) is deselected, counted in
# pytest's "deselected", never skipped as a pass; MEMO_NO_POSTGRES=1 fails any test that
# would start the server anyway.  Chromium is neither installed nor needed.  Each property
# test draws a tenth of its examples (hypothesis profile "fast", tests/fast_examples.py),
# each asserting what it asserts in the whole suite.  The venv is installed as above; no
# regression step.  Differential (ranx), integration and reliability tests, the slow tests
# and the PostgreSQL variants run in the whole suite only.  Extra arguments go to pytest
# after these (-k narrows; another -m replaces the selection).
#
# Exits non-zero when any test fails, when no test ran at all (pytest exit 5), or when a
# regression metric falls below its tolerance.
set -uo pipefail
cd "$(dirname "$0")/.."
_t0=$SECONDS
_fast=0
if [ "${1:-}" = "--fast" ]; then
  _fast=1
  shift
fi
if [ "$_fast" -eq 1 ]; then
  echo "test.sh --fast: unit, property and golden tests; no slow test, no PostgreSQL, no Chromium" >&2
elif [ "$#" -eq 0 ]; then
  cat >&2 <<'MSG'
test.sh: the whole suite, slow tests included.  On 2 cores expect about 30 minutes the first
  time (embedding SciFact's 5,183 abstracts alone is about 12 minutes; the wheel-install
  test downloads memo's dependencies into a fresh venv) and about 15 minutes afterwards
  (vectors cached in .cache/memo-eval).  Long steps print a line every 30 s.
  Fast path (under 3 minutes, no PostgreSQL, no Chromium): ./scripts/test.sh --fast
MSG
fi
# The whole suite needs a few GB of free disk (the eval cache, the wheel test's venv, the
# tests' databases); a disk that fills mid-run makes every later test error at set-up, so
# say up front when it is short, and say again after a failure how much was left.
_free_gb() { df -Pk "$1" 2>/dev/null | awk 'NR==2 {printf "%.1f", $4 / 1048576}'; }
_tmp="${TMPDIR:-/tmp}"
_need_gb=6
for _d in . "$_tmp"; do
  _f="$(_free_gb "$_d")"
  if [ -n "$_f" ] && awk -v f="$_f" -v n="$_need_gb" 'BEGIN {exit !(f < n)}'; then
    echo "test.sh: warning: only ${_f} GB free on the disk of $_d; the whole suite needs about ${_need_gb} GB (free space, or point TMPDIR elsewhere)" >&2
  fi
done
source scripts/_venv.sh dev

if [ "$_fast" -eq 1 ]; then
  MEMO_NO_POSTGRES=1 .venv/bin/python -m pytest tests/unit tests/property tests/golden \
    -m "not slow and not postgresql" --hypothesis-profile=fast "$@"
  rc=$?
else
  source scripts/_chromium.sh
  # The PostgreSQL half of the backend-parametrised tests must run here, never skip.
  MEMO_REQUIRE_POSTGRES=1 .venv/bin/python -m pytest "$@"
  rc=$?
fi
if [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ]; then
  echo "test.sh: free disk after the run: $(_free_gb .) GB (checkout), $(_free_gb "$_tmp") GB ($_tmp)" >&2
fi
echo "test.sh: pytest took $(( (SECONDS - _t0) / 60 )) min $(( (SECONDS - _t0) % 60 )) s (exit $rc)" >&2
if [ "$rc" -eq 5 ]; then
  echo "test.sh: no tests were collected or run (pytest exit 5); failing" >&2
  exit 1
fi
if [ "$rc" -ne 0 ] || [ "$#" -gt 0 ] || [ "$_fast" -eq 1 ]; then
  exit "$rc"
fi
echo "== fast quality regression: memo eval regress --fast" >&2
.venv/bin/memo eval regress --fast --quiet
