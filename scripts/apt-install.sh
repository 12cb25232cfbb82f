#!/bin/sh
# apt-install.sh PKG...: install Debian packages for make's set-up steps
# (apt-get update, then install), as root or through sudo. Another apt or
# dpkg holding its locks (unattended-upgrades, a second make) is waited
# for, up to APT_LOCK_WAIT seconds (default 300): apt-get install waits on
# the dpkg lock itself (DPkg::Lock::Timeout), but apt-get update fails at
# once on the lists lock, so its lock errors are retried here.
set -u
wait_s=${APT_LOCK_WAIT:-300}
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo

# retry CMD...: run CMD, retrying every 5 s while it fails for a lock held
# by another process, up to wait_s seconds in all.
retry() {
	waited=0
	while :; do
		out=$("$@" 2>&1) && { [ -n "$out" ] && printf '%s\n' "$out"; return 0; }
		case "$out" in
		*"Could not get lock"* | *"Unable to lock"* | *"Unable to acquire the dpkg frontend lock"*)
			if [ "$waited" -ge "$wait_s" ]; then
				printf '%s\n' "$out" >&2
				echo "apt-install.sh: another apt or dpkg held its locks for ${wait_s}s; try again when it is done" >&2
				return 1
			fi
			[ "$waited" -eq 0 ] && echo "apt-install.sh: another apt or dpkg holds its locks; waiting (up to ${wait_s}s)..." >&2
			sleep 5
			waited=$((waited + 5))
			;;
		*)
			printf '%s\n' "$out" >&2
			return 1
			;;
		esac
	done
}

retry $SUDO apt-get -o DPkg::Lock::Timeout="$wait_s" update -qq &&
	retry $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout="$wait_s" "$@"
