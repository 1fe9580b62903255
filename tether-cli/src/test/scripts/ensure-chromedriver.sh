#!/usr/bin/env bash
# Makes sure the dashboard's browser test (DashboardBrowserIT) has headless Chromium and its
# chromedriver. Maven runs this before tether-cli's integration tests (pre-integration-test).
#
# Usage: ensure-chromedriver.sh CHROMEDRIVER CHROMIUM [SKIP_TESTS] [SKIP_ITS]
#   CHROMEDRIVER, CHROMIUM: the paths the test uses (Debian: /usr/bin/chromedriver, /usr/bin/chromium)
#   SKIP_TESTS, SKIP_ITS:   Maven's skipTests and skipITs; "true" (as -DskipTests gives) means
#                           the tests will not run, so nothing is checked or installed.
#
# When either is missing it installs Debian's packages chromium and chromium-driver, if it can:
# as root (or with password-less sudo) and with apt-get. It never asks for input and gives apt-get
# at most TETHER_APT_TIMEOUT seconds (default 900). It always exits 0: when it cannot install, it
# says so, and DashboardBrowserIT fails with one message saying what to install.
set -uo pipefail

driver="${1:?usage: ensure-chromedriver.sh CHROMEDRIVER CHROMIUM [SKIP_TESTS] [SKIP_ITS]}"
browser="${2:?usage: ensure-chromedriver.sh CHROMEDRIVER CHROMIUM [SKIP_TESTS] [SKIP_ITS]}"
skip_tests="${3-}"
skip_its="${4-}"
say() { echo "ensure-chromedriver: $*"; }

# Maven passes an undefined ${skipTests} as written; -DskipTests alone gives "true".
for s in "$skip_tests" "$skip_its"; do
  if [ "$s" = true ]; then
    say "tests skipped; nothing to check"
    exit 0
  fi
done

present() { [ -x "$driver" ] && [ -x "$browser" ]; }

if present; then
  say "found $driver and $browser"
  exit 0
fi

missing() {
  local m=""
  [ -x "$browser" ] || m="$browser"
  [ -x "$driver" ] || m="${m:+$m and }$driver"
  echo "$m"
}
say "missing $(missing)"

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo=(sudo -n)
  else
    say "cannot install: not root and no password-less sudo. DashboardBrowserIT will fail;" \
      "install Chromium and its chromedriver (Debian: apt-get install chromium chromium-driver)"
    exit 0
  fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
  say "cannot install: no apt-get here. DashboardBrowserIT will fail; install Chromium and its" \
    "chromedriver (Debian: apt-get install chromium chromium-driver) at $browser and $driver"
  exit 0
fi

limit="${TETHER_APT_TIMEOUT:-900}"
timed=()
if command -v timeout >/dev/null 2>&1; then
  timed=(timeout --kill-after=30 "$limit")
fi
# (the ${a[@]+"${a[@]}"} form: an empty array under set -u in bash 3)
apt=(${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive ${timed[@]+"${timed[@]}"}
  apt-get -q -o DPkg::Lock::Timeout=120)

say "installing chromium and chromium-driver with apt-get (at most ${limit} s a step)"
if "${apt[@]}" update </dev/null \
    && "${apt[@]}" install -y chromium chromium-driver </dev/null; then
  if present; then
    say "installed: $("$driver" --version 2>/dev/null | head -n 1)"
  else
    say "installed chromium and chromium-driver, but $(missing) is still missing;" \
      "DashboardBrowserIT will fail"
  fi
else
  say "apt-get failed (exit $?); DashboardBrowserIT will fail: install chromium and" \
    "chromium-driver (Debian: apt-get install chromium chromium-driver)"
fi
exit 0
