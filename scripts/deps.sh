#!/bin/bash
# Install the Debian packages a uvnet job needs, only when they are missing.
# Usage: scripts/deps.sh PKG...   (as root on Debian 12; does nothing if all present)
set -euo pipefail
missing=()
for p in "$@"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "uvnet: installing Debian packages: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y --no-install-recommends "${missing[@]}" >/tmp/uvnet-apt.log 2>&1; then
	apt-get update >>/tmp/uvnet-apt.log 2>&1
	apt-get install -y --no-install-recommends "${missing[@]}" >>/tmp/uvnet-apt.log 2>&1 || {
		echo "uvnet: apt-get install failed, see /tmp/uvnet-apt.log" >&2
		exit 1
	}
fi
