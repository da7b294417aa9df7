# Sourced by demo.sh and test.sh: make sure .venv exists and holds memo (the memo-kb
# distribution, editable) with the requested extras; with `dev` also the evaluation harness
# (memo-kb-eval from eval/, editable: import package memo_eval, `memo eval`).  Reinstall
# when pyproject.toml or eval/pyproject.toml changed since the last install.
#   source scripts/_venv.sh [dev]
_extras="${1:-}"
_spec="."
[ -n "$_extras" ] && _spec=".[${_extras}]"
_stamp=".venv/.memo-installed${_extras:+-$_extras}"
_targets=(-e "$_spec")
case ",$_extras," in *,dev,*) _targets+=(-e ./eval) ;; esac

_pick_python() {
  if [ -n "${PYTHON:-}" ]; then echo "$PYTHON"; return; fi
  for c in python3.11 python3.12 python3.13 python3; do
    if command -v "$c" >/dev/null 2>&1 &&
       "$c" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
      echo "$c"; return
    fi
  done
  echo "memo needs Python >= 3.11 (set PYTHON=/path/to/python3.11)" >&2
  return 1
}

if [ ! -x .venv/bin/python ]; then
  _py="$(_pick_python)" || exit 1
  echo "creating .venv with $_py" >&2
  "$_py" -m venv .venv || exit 1
fi
if [ ! -f "$_stamp" ] || [ pyproject.toml -nt "$_stamp" ] || [ eval/pyproject.toml -nt "$_stamp" ]; then
  echo "installing memo into .venv: pip install ${_targets[*]}" >&2
  .venv/bin/python -m pip install -q --upgrade pip >&2 || exit 1
  # A .venv made before the rename still holds this checkout under its old distribution
  # name, memo (which also installed the harness as a top-level `eval`): remove it first,
  # or it would keep `import eval` working and share the memo scripts with memo-kb.
  if .venv/bin/python -m pip show -q memo >/dev/null 2>&1; then
    .venv/bin/python -m pip uninstall -q -y memo >&2 || exit 1
  fi
  .venv/bin/python -m pip install -q "${_targets[@]}" >&2 || exit 1
  touch "$_stamp"
fi
