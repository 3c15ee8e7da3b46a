#!/usr/bin/env bash
# Usage: .ci/ensure-apt.sh PKG CMD
# Installs Debian package PKG with apt-get when command CMD is not on PATH.
# Fails with a clear message when that is not possible (not root / no apt-get).
set -euo pipefail

if [ "$#" -ne 2 ]; then
    echo "usage: $0 PKG CMD" >&2
    exit 2
fi
pkg="$1"
cmd="$2"

if command -v "$cmd" >/dev/null 2>&1; then
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO="sudo -n"
    else
        SUDO="unavailable"
    fi
fi

if ! command -v apt-get >/dev/null 2>&1 || [ "$SUDO" = "unavailable" ]; then
    cat >&2 <<MSG
ERROR: passlens needs the system command '$cmd' (Debian package '$pkg'), which is not on PATH,
and it cannot be installed automatically here (needs apt-get and root or passwordless sudo).
Install it yourself, e.g.:
    sudo apt-get update && sudo apt-get install -y $pkg
(or your platform's equivalent: brew install $pkg, conda install $pkg, ...), then re-run make.
MSG
    exit 1
fi

echo ">>> '$cmd' not found: installing Debian package '$pkg'" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "$pkg"

if ! command -v "$cmd" >/dev/null 2>&1; then
    echo "ERROR: installed '$pkg' but '$cmd' is still not on PATH" >&2
    exit 1
fi
