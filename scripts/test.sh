#!/usr/bin/env bash
# Run memo's whole test suite, slow tests included (README: "Run the tests").
# Creates or refreshes .venv when needed (pip install -e ".[dev]"), then runs pytest.
# Extra arguments go to pytest (e.g. ./scripts/test.sh -m "not slow" for the quick suite).
# Exits non-zero when any test fails, and also when no test ran at all (pytest exit 5).
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/_venv.sh dev

.venv/bin/python -m pytest "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "test.sh: no tests were collected or run (pytest exit 5); failing" >&2
  exit 1
fi
exit "$rc"
