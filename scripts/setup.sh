#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Install every Debian 12 package trainmon's build and tests need (idempotent), then build the
# release binary into build/release. Run as root or with sudo available.
#   scripts/setup.sh            packages + release build
#   scripts/setup.sh --bench    also the tools bench/ compares against (hyperfine, glances, btop, wrk)
#   scripts/setup.sh --no-build packages only
set -euo pipefail
cd "$(dirname "$0")/.."

build=1 bench=0
for arg in "$@"; do
  case "$arg" in
    --no-build) build=0 ;;
    --bench) bench=1 ;;
    *) echo "setup.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake ninja-build pkg-config git clang-format ccache
  libcli11-dev nlohmann-json3-dev libfmt-dev libsqlite3-dev sqlite3 libtomlplusplus-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libcurl4-openssl-dev libncurses-dev libcpp-httplib-dev
  python3 python3-dev python3-pytest python3-psutil python3-torch python3-aiosmtpd python3-hypothesis faketime
  tmux procps chromium prometheus prometheus-alertmanager yamllint
  gettext locales fonts-noto-cjk
)
# Node.js and npm: the machine's own when it has them (Debian's npm conflicts with other builds).
command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)
bench_packages=(hyperfine glances btop wrk)
((bench)) && packages+=("${bench_packages[@]}")

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all ${#packages[@]} packages already installed"
fi
# The zh_CN.UTF-8 locale the Chinese-message tests run under (tests/e2e/test_i18n.py).
if ! locale -a 2>/dev/null | grep -qi '^zh_CN\.utf-\?8$'; then
  echo "setup: generating the zh_CN.UTF-8 locale"
  $SUDO localedef -i zh_CN -f UTF-8 zh_CN.UTF-8
fi
# Debian enables the Alertmanager service; the tests start their own (tests/e2e/test_prom_rules.py).
for svc in prometheus-alertmanager; do
  if command -v systemctl >/dev/null 2>&1 && systemctl is-enabled "$svc" >/dev/null 2>&1; then
    $SUDO systemctl disable --now "$svc" >/dev/null 2>&1 || true
  fi
done

# Front-end packages (uPlot, built into the binary; playwright-core, for the browser tests), pinned
# by web/package-lock.json.
if [ ! -f web/node_modules/.package-lock.json ] || ! cmp -s web/package-lock.json web/.installed-lock.json; then
  echo "setup: npm ci in web/"
  npm ci --prefix web --no-audit --no-fund --loglevel=error
  cp web/package-lock.json web/.installed-lock.json
fi

if ((build)); then
  cmake --preset release >/dev/null
  cmake --build --preset release --target trainmon fake_nvml
  echo "setup: built build/release/trainmon"
fi
