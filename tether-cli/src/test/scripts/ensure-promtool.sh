#!/usr/bin/env bash
# Makes sure the metrics exposition test (MetricsExpositionIT) has promtool, Prometheus's own
# checker of the text format. Maven runs this before tether-cli's integration tests
# (pre-integration-test), as ensure-chromedriver.sh for the browser test.
#
# Usage: ensure-promtool.sh PROMTOOL [SKIP_TESTS] [SKIP_ITS]
#   PROMTOOL:             the path the test uses (Debian: /usr/bin/promtool, package prometheus)
#   SKIP_TESTS, SKIP_ITS: Maven's skipTests and skipITs; "true" means the tests will not run, so
#                         nothing is checked or installed.
#
# When it is missing it installs Debian's package prometheus (without its recommendations), if it
# can: as root (or with password-less sudo) and with apt-get. It never asks for input and gives
# apt-get at most TETHER_APT_TIMEOUT seconds (default 900). It always exits 0: when it cannot
# install, it says so, and MetricsExpositionIT fails with one message saying what to install.
set -uo pipefail

tool="${1:?usage: ensure-promtool.sh PROMTOOL [SKIP_TESTS] [SKIP_ITS]}"
skip_tests="${2-}"
skip_its="${3-}"
say() { echo "ensure-promtool: $*"; }

for s in "$skip_tests" "$skip_its"; do
  if [ "$s" = true ]; then
    say "tests skipped; nothing to check"
    exit 0
  fi
done

if [ -x "$tool" ]; then
  say "found $tool"
  exit 0
fi
say "missing $tool"

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo=(sudo -n)
  else
    say "cannot install: not root and no password-less sudo. MetricsExpositionIT will fail;" \
      "install promtool (Debian: apt-get install prometheus)"
    exit 0
  fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
  say "cannot install: no apt-get here. MetricsExpositionIT will fail; install promtool" \
    "(Debian: apt-get install prometheus) at $tool"
  exit 0
fi

limit="${TETHER_APT_TIMEOUT:-900}"
timed=()
if command -v timeout >/dev/null 2>&1; then
  timed=(timeout --kill-after=30 "$limit")
fi
apt=(${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive ${timed[@]+"${timed[@]}"}
  apt-get -q -o DPkg::Lock::Timeout=120)

say "installing prometheus (for promtool) with apt-get (at most ${limit} s a step)"
if "${apt[@]}" update </dev/null \
    && "${apt[@]}" install -y --no-install-recommends prometheus </dev/null; then
  if [ -x "$tool" ]; then
    say "installed: $("$tool" --version 2>&1 | head -n 1)"
  else
    say "installed prometheus, but $tool is still missing; MetricsExpositionIT will fail"
  fi
else
  say "apt-get failed (exit $?); MetricsExpositionIT will fail: install prometheus" \
    "(Debian: apt-get install prometheus)"
fi
exit 0
