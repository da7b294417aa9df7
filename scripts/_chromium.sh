# Sourced by test.sh: the web UI test drives a real headless Chromium (Debian package
# `chromium`; playwright uses the system browser and never downloads one).  Install it
# when missing, and only it: `apt-get install --no-install-recommends chromium` (no
# `apt-get upgrade`).  When installing it would upgrade packages already on the system
# (a newer shared library chromium depends on), nothing is installed and the list is
# printed, unless MEMO_APT_ALLOW_UPGRADES=1.  If chromium cannot be installed, say so and
# go on: the web UI test then fails with the same instruction (it never skips).
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  _sudo=""
  [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && _sudo="sudo -n"
  if command -v apt-get >/dev/null 2>&1; then
    _apt="DEBIAN_FRONTEND=noninteractive $_sudo apt-get"
    echo "test.sh: installing the Debian package chromium for the web UI test:" \
         "apt-get install -y --no-install-recommends chromium" >&2
    if eval "$_apt update -qq" >&2; then
      # A simulated install lists what would change; "Inst pkg [old] (new ...)" = an upgrade.
      _upgrades="$(eval "$_apt install -s -y --no-install-recommends chromium" 2>/dev/null |
                   awk '/^Inst [^ ]+ \[/ {print $2}' | tr '\n' ' ')"
      if [ -n "$_upgrades" ] && [ "${MEMO_APT_ALLOW_UPGRADES:-0}" != "1" ]; then
        echo "test.sh: installing chromium would upgrade packages already installed: $_upgrades" >&2
        echo "test.sh: not installing it (MEMO_APT_ALLOW_UPGRADES=1 allows that); the web UI test will fail" >&2
      else
        eval "$_apt install -y -qq --no-install-recommends chromium" >&2 ||
          echo "test.sh: could not install chromium: the web UI test will fail until it is installed" >&2
      fi
    else
      echo "test.sh: apt-get update failed: install chromium yourself for the web UI test" >&2
    fi
  else
    echo "test.sh: no apt-get: install Chromium yourself for the web UI test" >&2
  fi
fi
