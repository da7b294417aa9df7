# Sourced by test.sh: the web UI test drives a real headless Chromium (Debian package
# `chromium`; playwright uses the system browser and never downloads one).  Install it
# when missing; if that is impossible, say so and go on: the test then fails with the
# same instruction (it never skips).
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  _sudo=""
  [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && _sudo="sudo -n"
  if command -v apt-get >/dev/null 2>&1; then
    echo "installing the Debian package chromium (for the web UI test)" >&2
    DEBIAN_FRONTEND=noninteractive $_sudo apt-get update -qq >&2 &&
      DEBIAN_FRONTEND=noninteractive $_sudo apt-get install -y -qq chromium >&2 ||
      echo "could not install chromium: the web UI test will fail until it is installed" >&2
  else
    echo "no apt-get: install Chromium yourself for the web UI test" >&2
  fi
fi
