#!/usr/bin/env bash
# Makes sure the clock-skew test (PostgresLeaseClockIT) has libfaketime, which it preloads into a
# worker JVM to shift that worker's wall clock. Maven runs this before tether-cli's integration
# tests (pre-integration-test), as ensure-chromedriver.sh.
#
# Usage: ensure-faketime.sh LIBFAKETIME [SKIP_TESTS] [SKIP_ITS]
#   LIBFAKETIME:          the library the test preloads (Debian: /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1)
#   SKIP_TESTS, SKIP_ITS: Maven's skipTests and skipITs; "true" means nothing is checked or installed.
#
# When it is missing it installs Debian's package faketime, if it can: as root (or with
# password-less sudo) and with apt-get, never asking for input, each apt-get step bounded by
# TETHER_APT_TIMEOUT seconds (default 900). It always exits 0: when it cannot install, it says so,
# and the test fails with one message saying what to install.
set -uo pipefail

lib="${1:?usage: ensure-faketime.sh LIBFAKETIME [SKIP_TESTS] [SKIP_ITS]}"
say() { echo "ensure-faketime: $*"; }

for s in "${2-}" "${3-}"; do
  if [ "$s" = true ]; then
    say "tests skipped; nothing to check"
    exit 0
  fi
done

if [ -r "$lib" ]; then
  say "found $lib"
  exit 0
fi
say "missing $lib"

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo=(sudo -n)
  else
    say "cannot install: not root and no password-less sudo; the clock-skew test will fail:" \
      "install Debian's package faketime (apt-get install faketime)"
    exit 0
  fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
  say "cannot install: no apt-get here; the clock-skew test will fail: install libfaketime at $lib"
  exit 0
fi

limit="${TETHER_APT_TIMEOUT:-900}"
timed=()
if command -v timeout >/dev/null 2>&1; then
  timed=(timeout --kill-after=30 "$limit")
fi
apt=(${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive ${timed[@]+"${timed[@]}"}
  apt-get -q -o DPkg::Lock::Timeout=120)

say "installing faketime with apt-get (at most ${limit} s a step)"
if "${apt[@]}" update </dev/null && "${apt[@]}" install -y faketime </dev/null; then
  if [ -r "$lib" ]; then
    say "installed $lib"
  else
    say "installed faketime, but $lib is still missing; the clock-skew test will fail"
  fi
else
  say "apt-get failed (exit $?); the clock-skew test will fail: install faketime"
fi
exit 0
