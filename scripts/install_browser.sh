#!/usr/bin/env bash
# A headless Chromium for tests/test_html_report.py's real-browser test, from the system's
# package manager (Playwright's own download needs the internet). Never fatal: it says what it
# did, or why it could not, on stderr and exits 0; the test then skips and says what is missing.
#
# Why CI skipped the test before (issue 38, item 9): .ci/run asked apt-get for
# chromium-headless-shell only, with every message thrown away. That package exists on Debian 12
# (bookworm and bookworm-security), not on Ubuntu (whose `chromium-browser` is a shim for the
# snap, which does not run in a container) nor on older Debian; apt-get refuses a user who is
# not root; and nothing said which of these happened. Here: root or passwordless sudo, the
# first package of a list that the package manager has a candidate for, and the reason printed.
set -uo pipefail

# The names tests/test_html_report.py looks for (TRITON_AGENT_BROWSERS: other names, for tests).
BROWSERS=${TRITON_AGENT_BROWSERS:-chromium-headless-shell chromium chromium-browser google-chrome}
for b in $BROWSERS; do
  if command -v "$b" >/dev/null && "$b" --version >/dev/null 2>&1; then
    echo "headless browser: $(command -v "$b") ($("$b" --version 2>/dev/null | head -1))" >&2
    exit 0
  fi
done

say() { echo "no headless browser installed: $*; tests/test_html_report.py's browser test will skip" >&2; }

if [ "$(id -u)" = 0 ]; then
  as_root=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  as_root=(sudo -n)
else
  say "installing a package needs root or passwordless sudo"
  exit 0
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
tail_log() { tail -n 5 "$log" | sed 's/^/  /' >&2; }

if command -v apt-get >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  if ! timeout 300 "${as_root[@]}" apt-get update -qq >"$log" 2>&1; then
    say "apt-get update failed (no network or registry?)"
    tail_log
    exit 0
  fi
  # Debian 12: chromium-headless-shell (a smaller download), else the full chromium. Not
  # Ubuntu's chromium-browser: a transitional package for the snap.
  for pkg in chromium-headless-shell chromium; do
    candidate=$(apt-cache policy "$pkg" 2>/dev/null | awk '/Candidate:/ {print $2}')
    [ -n "$candidate" ] && [ "$candidate" != "(none)" ] || continue
    if timeout 600 "${as_root[@]}" apt-get install -y -qq --no-install-recommends "$pkg" \
      >"$log" 2>&1; then
      echo "installed $pkg $candidate with apt-get" >&2
      exit 0
    fi
    say "apt-get install $pkg failed"
    tail_log
    exit 0
  done
  say "apt has no chromium-headless-shell or chromium package (sources: $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-unknown}"))"
elif command -v dnf >/dev/null; then
  if timeout 600 "${as_root[@]}" dnf install -y -q chromium-headless >"$log" 2>&1; then
    echo "installed chromium-headless with dnf" >&2
  else
    say "dnf install chromium-headless failed"
    tail_log
  fi
elif command -v apk >/dev/null; then
  if timeout 600 "${as_root[@]}" apk add -q chromium >"$log" 2>&1; then
    echo "installed chromium with apk" >&2
  else
    say "apk add chromium failed"
    tail_log
  fi
else
  say "no apt-get, dnf or apk on this machine"
fi
exit 0
