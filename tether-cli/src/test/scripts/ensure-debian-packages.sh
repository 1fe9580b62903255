#!/usr/bin/env bash
# Makes sure the integration tests that drive system tools have them: Maven runs this before
# tether-cli's integration tests (pre-integration-test).
#
# Usage: ensure-debian-packages.sh SKIP_TESTS SKIP_ITS SPEC...
#   SKIP_TESTS, SKIP_ITS: Maven's skipTests and skipITs; "true" (as -DskipTests gives) means the
#                         tests will not run, so nothing is checked or installed.
#   SPEC:                 TEST:PATH[,PATH...]:PACKAGE[,PACKAGE...][:norec] — the test that needs
#                         the files, the files it uses, and Debian's packages that provide them
#                         ("norec": install without the packages' recommendations).
#   e.g. DashboardBrowserIT:/usr/bin/chromedriver,/usr/bin/chromium:chromium,chromium-driver
#
# For each spec whose files are missing it installs the packages, if it can: as root (or with
# password-less sudo) and with apt-get, never asking for input, each apt-get step bounded by
# TETHER_APT_TIMEOUT seconds (default 900), one `apt-get update` for the run. It always exits 0:
# when it cannot install, it says so, and the test fails with one message saying what to install.
set -uo pipefail

usage="usage: ensure-debian-packages.sh SKIP_TESTS SKIP_ITS TEST:PATH[,PATH...]:PACKAGE[,PACKAGE...][:norec]..."
[ "$#" -ge 3 ] || { echo "$usage" >&2; exit 0; }
say() { echo "ensure-debian-packages: $*"; }

# Maven passes an undefined ${skipTests} as written; -DskipTests alone gives "true".
for s in "$1" "$2"; do
  if [ "$s" = true ]; then
    say "tests skipped; nothing to check"
    exit 0
  fi
done
shift 2

missing_of() { # PATHS (comma-separated) -> the missing ones, space-separated
  local m="" p
  IFS=, read -r -a ps <<<"$1"
  for p in "${ps[@]}"; do [ -e "$p" ] || m="${m:+$m }$p"; done
  echo "$m"
}

sudo=()
can_install=""
updated=""
apt=()
prepare() { # decides once whether and how apt-get can run; prints why not
  [ -n "$can_install" ] && return
  can_install=no
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      sudo=(sudo -n)
    else
      say "cannot install: not root and no password-less sudo"
      return
    fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    say "cannot install: no apt-get here"
    return
  fi
  local limit="${TETHER_APT_TIMEOUT:-900}" timed=()
  if command -v timeout >/dev/null 2>&1; then
    timed=(timeout --kill-after=30 "$limit")
  fi
  # (the ${a[@]+"${a[@]}"} form: an empty array under set -u in bash 3)
  apt=(${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive ${timed[@]+"${timed[@]}"}
    apt-get -q -o DPkg::Lock::Timeout=120)
  can_install=yes
}

for spec in "$@"; do
  IFS=: read -r test paths packages flags <<<"$spec"
  pkgs="${packages//,/ }"
  missing="$(missing_of "$paths")"
  if [ -z "$missing" ]; then
    say "$test: found ${paths//,/ }"
    continue
  fi
  say "$test: missing $missing"
  prepare
  if [ "$can_install" != yes ]; then
    say "$test will fail; install Debian's $pkgs (apt-get install $pkgs)"
    continue
  fi
  if [ -z "$updated" ]; then
    "${apt[@]}" update </dev/null || say "apt-get update failed (exit $?)"
    updated=yes
  fi
  norec=()
  [ "${flags-}" = norec ] && norec=(--no-install-recommends)
  say "$test: installing $pkgs with apt-get"
  # shellcheck disable=SC2086
  if "${apt[@]}" install -y ${norec[@]+"${norec[@]}"} $pkgs </dev/null; then
    missing="$(missing_of "$paths")"
    if [ -z "$missing" ]; then
      say "$test: installed $pkgs"
    else
      say "$test: installed $pkgs, but $missing is still missing; $test will fail"
    fi
  else
    say "$test: apt-get failed (exit $?); $test will fail: install $pkgs"
  fi
done
exit 0
