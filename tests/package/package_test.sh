#!/usr/bin/env bash
# The Debian packages (cmake/Packaging.cmake, issue 23), end to end:
#   1. CPack builds tlbfleet-controller, tlbfleet-agent and tlbfleet-cli from BUILD_DIR (the
#      `package` target's command, into a temporary directory so the build tree keeps no
#      stray .debs);
#   2. their contents and control data: files, conffiles, maintainer scripts, Depends from
#      dpkg-shlibdeps, the units' ExecStart;
#   3. lintian: no errors (warnings are printed);
#   4. a copy of a clean Debian 12 root (tests/package/package_root.sh, cached under
#      /var/cache/tlbfleet-package-root): `apt-get install ./tlbfleet-*.deb` pulls the runtime
#      dependencies from Debian's archive, the user and state directory exist, nothing was
#      enabled, `tlbfleet-controller --version` runs, and the controller started with its
#      unit's ExecStart command line, as the unit's User, in a network namespace of its own,
#      answers /healthz and serves the packaged dashboard; then it is stopped with SIGTERM.
# Needs root (chroot, mounts, unshare) and Debian's archive. Usage: package_test.sh BUILD_DIR
set -euo pipefail

build=$(cd "$1" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${TLBFLEET_PACKAGE_ROOT_CACHE:-/var/cache/tlbfleet-package-root}
t0=$SECONDS

fail() {
  echo "FAIL: $*"
  exit 1
}
step() { echo "--- [$((SECONDS - t0)) s] $*"; }

[[ $(id -u) -eq 0 ]] || fail "needs root (chroot, mount, unshare)"
for tool in cpack dpkg-deb dpkg-shlibdeps lintian debootstrap unshare chroot; do
  command -v "$tool" >/dev/null || fail "$tool not found (deploy/install-deps.sh installs it)"
done

work=$(mktemp -d /tmp/tlbfleet-package-test.XXXXXX)
root=$work/root
mounted=()
cleanup() {
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount -l "${mounted[i]}" 2>/dev/null || true
  done
  # Never follow a mount into the host: only remove once nothing is mounted below.
  if ! grep -q " $work/" /proc/mounts; then
    rm -rf "$work"
  else
    echo "package_test: left $work (still mounted)"
  fi
}
trap cleanup EXIT

# --- 1. build -------------------------------------------------------------------------------
step "cpack"
(cd "$build" && cpack --config CPackConfig.cmake -B "$work/out") >"$work/cpack.log" 2>&1 || {
  cat "$work/cpack.log"
  fail "cpack failed"
}
debs=("$work"/out/tlbfleet-*.deb)
controller_deb=$(ls "$work"/out/tlbfleet-controller_*_amd64.deb)
agent_deb=$(ls "$work"/out/tlbfleet-agent_*_amd64.deb)
cli_deb=$(ls "$work"/out/tlbfleet-cli_*_amd64.deb)
((${#debs[@]} == 3)) || fail "expected 3 packages, got: ${debs[*]}"
ls -l "${debs[@]}"

# --- 2. contents ----------------------------------------------------------------------------
step "contents"
# Listings are read into files first: grep -q closing a pipe would kill dpkg-deb (pipefail).
for deb in "${debs[@]}"; do
  dpkg-deb -c "$deb" | awk '{print $NF}' >"$deb.files"
  dpkg-deb --ctrl-tarfile "$deb" | tar -t >"$deb.control"
done
has_file() {  # DEB PATH: the package holds ./PATH
  grep -qx "\./${2#/}" "$1.files" || fail "$(basename "$1") does not hold $2"
}
field() { dpkg-deb -f "$1" "$2"; }
has_control() {  # DEB NAME: the control archive holds NAME
  grep -qx "\./$2" "$1.control" || fail "$(basename "$1") has no control file $2"
}

for f in usr/bin/tlbfleet-controller lib/systemd/system/tlbfleet-controller.service \
  etc/tlbfleet/controller.yaml usr/share/tlbfleet/dashboard/index.html \
  usr/share/doc/tlbfleet-controller/copyright usr/share/doc/tlbfleet-controller/changelog.Debian.gz \
  usr/share/doc/tlbfleet-controller/operations.md; do
  has_file "$controller_deb" "$f"
done
grep -q '^\./usr/share/tlbfleet/dashboard/assets/.*\.js$' "$controller_deb.files" ||
  fail "the controller's package holds no dashboard assets"
for f in usr/bin/tlbfleet-agent usr/bin/tlbfleet-bench lib/systemd/system/tlbfleet-agent.service \
  etc/tlbfleet/agent.yaml usr/share/doc/tlbfleet-agent/copyright usr/share/doc/tlbfleet-agent/agent.md; do
  has_file "$agent_deb" "$f"
done
for f in usr/bin/tlbfleet usr/share/doc/tlbfleet-cli/copyright usr/share/doc/tlbfleet-cli/cli.md; do
  has_file "$cli_deb" "$f"
done
# Each binary in its own package only.
grep -qE '^\./usr/bin/tlbfleet(-agent|-bench)?$' "$controller_deb.files" &&
  fail "the controller's package holds another program"

for script in postinst prerm postrm conffiles md5sums; do
  has_control "$controller_deb" "$script"
  has_control "$agent_deb" "$script"
done
[[ $(dpkg-deb --ctrl-tarfile "$controller_deb" | tar -xO ./conffiles) == /etc/tlbfleet/controller.yaml ]] ||
  fail "controller conffiles: $(dpkg-deb --ctrl-tarfile "$controller_deb" | tar -xO ./conffiles)"
[[ $(dpkg-deb --ctrl-tarfile "$agent_deb" | tar -xO ./conffiles) == /etc/tlbfleet/agent.yaml ]] ||
  fail "agent conffiles: $(dpkg-deb --ctrl-tarfile "$agent_deb" | tar -xO ./conffiles)"

# dpkg-shlibdeps' dependencies: Debian's gRPC, protobuf and libc at least.
for deb in "${debs[@]}"; do
  depends=$(field "$deb" Depends)
  echo "$(field "$deb" Package) Depends: $depends"
  for lib in libc6 libgrpc++ libprotobuf; do
    grep -q "$lib" <<<"$depends" || fail "$(field "$deb" Package): Depends lacks $lib: $depends"
  done
done
grep -q adduser <<<"$(field "$controller_deb" Depends)" || fail "controller does not depend on adduser"

# The units run the packaged binaries with the packaged configs.
unit_text=$(dpkg-deb --fsys-tarfile "$controller_deb" | tar -xO ./lib/systemd/system/tlbfleet-controller.service)
exec_start=$(sed -n 's/^ExecStart=//p' <<<"$unit_text")
[[ $exec_start == "/usr/bin/tlbfleet-controller --config /etc/tlbfleet/controller.yaml" ]] ||
  fail "controller unit ExecStart=$exec_start"
unit_user=$(sed -n 's/^User=//p' <<<"$unit_text")
[[ $unit_user == tlbfleet ]] || fail "controller unit User=$unit_user"
agent_unit=$(dpkg-deb --fsys-tarfile "$agent_deb" | tar -xO ./lib/systemd/system/tlbfleet-agent.service)
grep -q '^ExecStart=/usr/bin/tlbfleet-agent --config /etc/tlbfleet/agent.yaml$' <<<"$agent_unit" ||
  fail "agent unit ExecStart"
grep -q /usr/local <<<"$unit_text" && fail "controller unit still names /usr/local"

# --- 3. lintian -----------------------------------------------------------------------------
step "lintian"
# Exit status 1: errors found (checked below from the tags); 2 and above: lintian itself failed.
lintian_status=0
lintian --tag-display-limit 0 "${debs[@]}" >"$work/lintian.log" 2>&1 || lintian_status=$?
cat "$work/lintian.log"
((lintian_status <= 1)) || fail "lintian failed (exit $lintian_status)"
if grep -q '^E: ' "$work/lintian.log"; then
  fail "lintian reports errors"
fi

# --- 4. a clean Debian 12 root --------------------------------------------------------------
step "clean root"
base=$("$here/package_root.sh" "$cache")
mkdir "$root"
# A copy per run, so the cached root stays clean (about 200 MB; a few seconds).
cp -a "$base/." "$root/"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mkdir -p "$root/debs" "$cache/archives/partial"
cp "${debs[@]}" "$root/debs/"
for m in proc dev dev/pts; do
  case $m in
    proc) mount -t proc proc "$root/proc" ;;
    *) mount --bind "/$m" "$root/$m" ;;
  esac
  mounted+=("$root/$m")
done
# Downloaded .debs are kept between runs (outside the copy): a warm run downloads nothing.
mount --bind "$cache/archives" "$root/var/cache/apt/archives"
mounted+=("$root/var/cache/apt/archives")

in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }
for p in libgrpc++1.51 tlbfleet-controller; do
  in_root dpkg-query -W "$p" >/dev/null 2>&1 && fail "the clean root already has $p"
done

step "apt-get install ./debs/tlbfleet-*.deb"
in_root apt-get update -q >"$work/apt.log" 2>&1 || { cat "$work/apt.log"; fail "apt-get update"; }
# ./tlbfleet-*.deb as the README has it (the root's sh expands it).
# The shared archive directory holds apt's lock: two test runs at once take turns here.
flock "$cache/archives.lock" chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
  LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive sh -c \
  'cd /debs && apt-get install -y -q --no-install-recommends ./tlbfleet-*.deb' \
  >>"$work/apt.log" 2>&1 || { cat "$work/apt.log"; fail "apt-get install ./tlbfleet-*.deb"; }
echo "apt: $(grep -c '^Setting up ' "$work/apt.log") packages set up (the three and their dependencies)"
for p in tlbfleet-controller tlbfleet-agent tlbfleet-cli libgrpc++1.51; do
  in_root dpkg-query -W -f='${Status}\n' "$p" | grep -q 'install ok installed' ||
    fail "$p is not installed in the root"
done

step "after install"
in_root getent passwd tlbfleet | grep -q ':/var/lib/tlbfleet:' || fail "no system user tlbfleet"
uid=$(in_root id -u tlbfleet)
((uid < 1000)) || fail "tlbfleet is not a system user (uid $uid)"
# Owners by number: the host's /etc/passwd may give the root's uid another name.
[[ $(stat -c '%u %a' "$root/var/lib/tlbfleet") == "$uid 700" ]] ||
  fail "/var/lib/tlbfleet: $(stat -c '%u %a' "$root/var/lib/tlbfleet") (tlbfleet is $uid)"
[[ $(stat -c '%u %a' "$root/var/lib/tlbfleet-agent") == "0 700" ]] ||
  fail "/var/lib/tlbfleet-agent: $(stat -c '%u %a' "$root/var/lib/tlbfleet-agent")"
# Nothing enabled behind the administrator's back.
if compgen -G "$root/etc/systemd/system/*.wants/tlbfleet-*" >/dev/null; then
  fail "a unit was enabled: $(ls "$root"/etc/systemd/system/*.wants/tlbfleet-*)"
fi
in_root tlbfleet-controller --version | grep -qx "$(field "$controller_deb" Version | sed 's/-[^-]*$//')" ||
  fail "tlbfleet-controller --version: $(in_root tlbfleet-controller --version 2>&1)"
in_root tlbfleet-agent --version >/dev/null || fail "tlbfleet-agent --version"
in_root tlbfleet --version >/dev/null || fail "tlbfleet --version"
in_root tlbfleet-bench --list >/dev/null || fail "tlbfleet-bench --list"

# --- 5. the controller under its unit's command line -----------------------------------------
# ExecStart as the unit's User in the chroot, in a network namespace of its own so the
# config's 127.0.0.1:7070/8080 meet no other test. Readiness: /healthz over bash's /dev/tcp.
step "start: $exec_start (as $unit_user)"
uid=$(in_root id -u "$unit_user")
gid=$(in_root id -g "$unit_user")
cat >"$work/start.sh" <<EOF
set -u
uid=$uid gid=$gid
ip link set lo up
chroot --userspec=\$uid:\$gid --groups=\$gid "$root" /usr/bin/env -i PATH=/usr/bin:/bin \
  $exec_start >"$work/controller.log" 2>&1 &
pid=\$!
ok=1
for _ in \$(seq 200); do
  if (: <>/dev/tcp/127.0.0.1/8080) 2>/dev/null; then
    exec 3<>/dev/tcp/127.0.0.1/8080
    printf 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
    cat <&3 >"$work/healthz.txt"
    exec 3<&-
    printf 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >"$work/req"
    exec 3<>/dev/tcp/127.0.0.1/8080
    cat "$work/req" >&3
    cat <&3 >"$work/index.txt"
    exec 3<&-
    ok=0
    break
  fi
  kill -0 \$pid 2>/dev/null || break
  sleep 0.1
done
kill -TERM \$pid 2>/dev/null
wait \$pid
echo "exit=\$?" >"$work/controller.exit"
exit \$ok
EOF
unshare --net bash "$work/start.sh" || {
  cat "$work/controller.log"
  fail "the controller did not answer on 127.0.0.1:8080"
}
cat "$work/controller.log"
head -1 "$work/healthz.txt" | grep -q ' 200 ' || fail "/healthz: $(head -1 "$work/healthz.txt")"
head -1 "$work/index.txt" | grep -q ' 200 ' || fail "GET /: $(head -1 "$work/index.txt")"
grep -q '<script type="module"[^>]* src="/assets/' "$work/index.txt" ||
  fail "GET / is not the packaged dashboard"
grep -q 'dashboard: /usr/share/tlbfleet/dashboard' "$work/controller.log" ||
  fail "the controller did not say it serves /usr/share/tlbfleet/dashboard"
[[ -s $root/var/lib/tlbfleet/fleet.db ]] || fail "no database at /var/lib/tlbfleet/fleet.db"
[[ $(stat -c %u "$root/var/lib/tlbfleet/fleet.db") == "$uid" ]] || fail "fleet.db not owned by tlbfleet"
grep -qx 'exit=0' "$work/controller.exit" || fail "the controller's exit on SIGTERM: $(cat "$work/controller.exit")"

# --- 6. purge keeps the database, removes the conffile ---------------------------------------
step "purge"
flock "$cache/archives.lock" chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
  DEBIAN_FRONTEND=noninteractive apt-get purge -y -q tlbfleet-controller tlbfleet-agent tlbfleet-cli \
  >>"$work/apt.log" 2>&1 || { tail -30 "$work/apt.log"; fail "apt-get purge"; }
[[ -e $root/etc/tlbfleet/controller.yaml ]] && fail "purge left /etc/tlbfleet/controller.yaml"
[[ -s $root/var/lib/tlbfleet/fleet.db ]] || fail "purge removed the database"
[[ -e $root/var/lib/tlbfleet-agent ]] && fail "purge left /var/lib/tlbfleet-agent"

step "PASS: packages built, inspected, lint-free of errors, installed into a clean Debian 12 root; the controller started under its unit's command line"
