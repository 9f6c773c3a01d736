#!/usr/bin/env bash
# Makes sure the cached clean Debian 12 root file system exists, and prints its path.
#   package_root.sh [CACHE_DIR]    (default /var/cache/tlbfleet-package-root)
# The root is `debootstrap --variant=minbase bookworm` from Debian's archive with its apt lists
# fetched, and nothing else: the package test copies it and installs the .debs into the copy,
# so apt must pull every runtime dependency itself. It lives outside the clone, like the lab's
# kernel cache, because a debootstrap takes minutes; it is rebuilt when missing or incomplete
# (the marker file is written last) and when older than 30 days (the archive moves on).
# Needs root (debootstrap, chroot).
set -euo pipefail

cache=${1:-/var/cache/tlbfleet-package-root}
mirror=${TLBFLEET_DEBIAN_MIRROR:-http://deb.debian.org/debian}
root=$cache/root
marker=$root/.tlbfleet-package-root-complete

mkdir -p "$cache"
# One builder at a time; a second caller waits and then finds the root made.
exec 9>"$cache/lock"
flock 9

if [[ -f $marker ]] && [[ -z $(find "$marker" -mtime +30) ]]; then
  echo "$root"
  exit 0
fi

new=$cache/root.new
rm -rf "$new" "$root"
echo "package_root: debootstrap bookworm into $new (from $mirror; a few minutes, once)" >&2
debootstrap --variant=minbase bookworm "$new" "$mirror" >"$cache/debootstrap.log" 2>&1 || {
  tail -30 "$cache/debootstrap.log" >&2
  exit 1
}
cat >"$new/etc/apt/sources.list" <<SOURCES
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
SOURCES
cp /etc/resolv.conf "$new/etc/resolv.conf"
chroot "$new" apt-get update -q >>"$cache/debootstrap.log" 2>&1 || {
  tail -30 "$cache/debootstrap.log" >&2
  exit 1
}
chroot "$new" apt-get clean
touch "$new/.tlbfleet-package-root-complete"
mv "$new" "$root"
echo "$root"
