#!/usr/bin/env bash
# The lab's path for kernels built from source (docs/vm-lab.md, "Booting kernels built from
# source"), without a controller or an agent: one guest started with `lab up --artifacts DIR`
# over an artifact directory laid out here by hand, as the controller's store lays it out.
#
#   vm_artifact_boot_test.sh [--image BZIMAGE] [--keep]
#
# 1. The artifact: objects/<id>/manifest (canonical text, common/artifacts/manifest.h; id =
#    its sha256) and files/bzImage = BZIMAGE (default: Debian's vmlinuz from the lab's kernel
#    cache, a bzImage; pass a `lab kernel` out/<hash>/bzImage to boot a lab kernel).
# 2. The guest boots its default kernel (Debian's, PVH); no tlbfleet.build= on its command line.
# 3. In the guest, /sbin/tlbfleet-install-kernel with the agent's variables, then a reboot: the
#    next boot must run BZIMAGE's release with the tag on /proc/cmdline, and the supervisor's
#    log must name the artifact.
# 4. A request whose build id is not the image's sha256: refused (the log says why), and the
#    default kernel boots without a tag.
# 5. Without tlbfleet.artifacts=1 (its marker removed) the script exits 1 naming --artifacts.
# The agent's state for boot entries across those reboots (each boot a fresh initramfs): the
# guest starts with none (lab up clears it); before each install-kernel the test writes a
# kernel-entries file into /var/lib/tlbfleet-agent as the agent would (the entry of the build
# asked for, newest), and a stale boot-entry-journal; the next boot must have the same
# kernel-entries (root, 0600, the dir 0700, agent-id untouched) and the journal the agent
# writes after the install ("entry NAME\nfrom <the boot it left>"), also after the refused
# request; a plain reboot after that keeps kernel-entries and carries no journal.
#
# The guest's agent is a stand-in (/bin/sleep: it exits at once and is respawned), since
# nothing here needs one. Env: TLBFLEET_VM_LAB_CACHE (kernel cache, default
# <repo>/build/vm-lab), TLBFLEET_VM_ARTIFACT_TEST_DIR (the lab directory, default
# <repo>/build/vm-artifact-test). Exit 0: every check held; 1: one failed (it says which).
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$script_dir/../.." && pwd)
lab=$repo/deploy/vm-lab/lab
cache=${TLBFLEET_VM_LAB_CACHE:-$repo/build/vm-lab}
dir=${TLBFLEET_VM_ARTIFACT_TEST_DIR:-$repo/build/vm-artifact-test}
image=""
keep=0
while (($#)); do
  case $1 in
    --image) image=${2:?--image needs a bzImage}; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "usage: $0 [--image BZIMAGE] [--keep]" >&2; exit 2 ;;
  esac
done

fail() {
  echo "FAIL: $*" >&2
  echo "--- supervisor log" >&2
  cat "$dir/run/vm1.supervisor.log" >&2 2>/dev/null || true
  echo "--- console (last 40 lines)" >&2
  tail -n 40 "$dir/run/vm1.log" >&2 2>/dev/null || true
  exit 1
}
step() { echo "== $(date -u +%T) $*"; }
labx() { "$lab" --out "$dir" --cache "$cache" --agent /bin/sleep "$@"; }
state=/var/lib/tlbfleet-agent
# The sha256 of FILE in the guest ("-" when it is not there).
guest_sum() { labx exec 1 "if [ -f $1 ]; then sha256sum < $1 | cut -d' ' -f1; else echo -; fi"; }
# Checks that the guest's agent state is kernel-entries = file $1 and boot-entry-journal = file
# $2 ("" = none), root-owned, 0600, in a 0700 dir, with agent-id beside them; $3: which boot.
check_state() {
  local out want
  out=$(labx exec 1 "stat -c '%n %u:%g %a' $state $state/*; cat /proc/cmdline") || fail "exec in $3: $out"
  echo "   $3: agent state: $(head -n -1 <<< "$out" | tr '\n' ';')"
  grep -qx "$state 0:0 700" <<< "$out" || fail "$3: $state is not root's 0700: $out"
  grep -qx "$state/kernel-entries 0:0 600" <<< "$out" || fail "$3: no root-owned 0600 kernel-entries: $out"
  grep -qx "$state/agent-id 0:0 600" <<< "$out" || fail "$3: no agent-id: $out"
  want=$(sha256sum < "$1" | cut -d' ' -f1)
  [[ $(guest_sum $state/kernel-entries) == "$want" ]] ||
    fail "$3: kernel-entries differs from what the boot before had: $(labx exec 1 "cat $state/kernel-entries")"
  if [[ -n $2 ]]; then
    want=$(sha256sum < "$2" | cut -d' ' -f1)
    [[ $(guest_sum $state/boot-entry-journal) == "$want" ]] ||
      fail "$3: boot-entry-journal is not '$(cat "$2")': $(labx exec 1 "cat $state/boot-entry-journal 2>&1")"
  else
    [[ $(guest_sum $state/boot-entry-journal) == - ]] ||
      fail "$3: a boot-entry-journal was carried into a boot nobody selected: $(labx exec 1 "cat $state/boot-entry-journal")"
  fi
  local id
  id=$(labx exec 1 "cat $state/agent-id") || fail "$3: agent-id"
  [[ " $(tail -n 1 <<< "$out") " == *" tlbfleet.agent_id=$id "* ]] || fail "$3: agent-id $id is not the command line's"
}

cleanup() {
  labx down > /dev/null 2>&1 || true
  ((keep)) || rm -rf "$dir/artifacts"
}
trap cleanup EXIT

mkdir -p "$dir"
labx down > /dev/null 2>&1 || true
step "lab build (stand-in agent /bin/sleep; kernel cache $cache)"
labx build > "$dir/build.log" 2>&1 || { cat "$dir/build.log" >&2; fail "lab build"; }
default_release=$(cat "$dir/release")
[[ -n $image ]] || image=$(readlink -f "$dir/vmlinuz")
[[ -f $image ]] || fail "no image $image"

# --- the artifact, laid out as controller/artifacts/artifact_store.h does ---------------------
step "artifact of $image"
build_id=$(sha256sum < "$image" | cut -d' ' -f1)
size=$(stat -c %s "$image")
# The release a bzImage names in its setup header (what `lab up --kernel` reads too).
offset=$(od -An -t u2 -j 526 -N 2 "$image" | tr -d ' ')
release=$(dd if="$image" bs=1 skip=$((offset + 512)) count=128 status=none | tr '\0' '\n' |
          head -n 1 | cut -d' ' -f1)
[[ -n $release ]] || fail "$image has no version string"
art=$dir/artifacts
rm -rf "$art"
manifest=$(printf '%s\n' "tlbfleet-artifact-manifest 1" "source linux" "config lab" \
  "commit 0000000000000000000000000000000000000000" "arch x86_64" \
  "compiler gcc (Debian 12.2.0-14) 12.2.0" "kernel_release $release" "build_id $build_id" \
  "file $build_id $size bzImage")
id=$(printf '%s\n' "$manifest" | sha256sum | cut -d' ' -f1)
mkdir -p "$art/objects/$id/files"
printf '%s\n' "$manifest" > "$art/objects/$id/manifest"
cp "$image" "$art/objects/$id/files/bzImage"
tag=tlbfleet.build=${build_id:0:16}
echo "   id $id, build $build_id, release $release, tag $tag"

# --- boot 1: the default kernel -------------------------------------------------------------
step "lab up 1 --artifacts $art"
# Port 9 (discard): nothing listens; the stand-in agent never dials anyway.
labx up 1 --controller-port 9 --artifacts "$art" --watchdog 0 > "$dir/up.log" 2>&1 ||
  { cat "$dir/up.log" >&2; fail "lab up"; }
out=$(labx exec 1 --timeout 120 'uname -r; cat /proc/cmdline') || fail "exec in boot 1: $out"
echo "   boot 1: $(head -n 1 <<< "$out")"
[[ $(head -n 1 <<< "$out") == "$default_release" ]] || fail "boot 1 runs $(head -n 1 <<< "$out"), not $default_release"
[[ $out == *tlbfleet.artifacts=1* ]] || fail "boot 1's command line lacks tlbfleet.artifacts=1: $out"
[[ $out != *tlbfleet.build=* ]] || fail "boot 1's command line has a build tag: $out"
out=$(labx exec 1 "ls -A $state") || fail "exec in boot 1: $out"
[[ $out == agent-id ]] || fail "boot 1 (a fresh guest) has agent state beyond agent-id: $out"

# --- boot 2: the artifact, requested by the guest ------------------------------------------
step "install-kernel + reboot"
env="TLBFLEET_ARTIFACT_ID=$id TLBFLEET_BUILD_ID=$build_id TLBFLEET_BUILD_TAG=$tag TLBFLEET_KERNEL_RELEASE=$release"
# As the agent does: the entry kept before the command runs (newest), an older one before it,
# and a journal of an earlier reboot (the agent writes the new one after the command).
zeros=$(printf '%040d' 0)
printf '%s\n' "name=kernel-b0 build=$(printf '%064d' 1) release=6.1.0-lab commit=$zeros artifact=$(printf '%064d' 2)" \
  "name=kernel-b1 build=$build_id release=$release commit=$zeros artifact=$id" > "$dir/kernel-entries.1"
boot1=$(labx exec 1 'cat /proc/sys/kernel/random/boot_id') || fail "boot_id of boot 1"
printf 'entry kernel-b1\nfrom %s\n' "$boot1" > "$dir/journal.2"
out=$(labx exec 1 "mkdir -p $state; printf 'entry kernel-b0\nfrom x\nlanded y\n' > $state/boot-entry-journal;
  echo $(base64 -w 0 < "$dir/kernel-entries.1") | base64 -d > $state/kernel-entries;
  $env /sbin/tlbfleet-install-kernel; echo status=\$?") || true
[[ $out == *status=0* ]] || fail "install-kernel: $out"
labx exec 1 '(sleep 1; reboot -f) > /dev/null 2>&1 &' > /dev/null || fail "reboot request"
sleep 3
out=$(labx exec 1 --timeout 180 'uname -r; cat /proc/cmdline') || fail "exec in boot 2: $out"
echo "   boot 2: $(head -n 1 <<< "$out"); $(grep -o 'tlbfleet.build=[0-9a-f]*' <<< "$out" || echo 'no tag')"
[[ $(head -n 1 <<< "$out") == "$release" ]] || fail "boot 2 runs $(head -n 1 <<< "$out"), not the artifact's $release"
[[ " $(tail -n 1 <<< "$out") " == *" $tag "* ]] || fail "boot 2's command line lacks $tag: $out"
grep -q "next boot: artifact $id" "$dir/run/vm1.supervisor.log" ||
  fail "the supervisor's log does not name artifact $id"
cmp -s "$dir/run/vm1.artifact-bzImage" "$image" || fail "the supervisor booted a different image"
check_state "$dir/kernel-entries.1" "$dir/journal.2" "boot 2"

# --- boot 3: a request whose build id is not the image's: refused, default kernel ------------
step "install-kernel with a wrong build id + reboot"
bad=$(printf '%064d' 0)
cp "$dir/kernel-entries.1" "$dir/kernel-entries.2"
echo "name=kernel-b2 build=$bad release=$release commit=$zeros artifact=$id" >> "$dir/kernel-entries.2"
boot2=$(labx exec 1 'cat /proc/sys/kernel/random/boot_id') || fail "boot_id of boot 2"
printf 'entry kernel-b2\nfrom %s\n' "$boot2" > "$dir/journal.3"
out=$(labx exec 1 "echo '$(tail -n 1 "$dir/kernel-entries.2")' >> $state/kernel-entries;
  TLBFLEET_ARTIFACT_ID=$id TLBFLEET_BUILD_ID=$bad TLBFLEET_BUILD_TAG=tlbfleet.build=${bad:0:16} /sbin/tlbfleet-install-kernel; echo status=\$?") || true
[[ $out == *status=0* ]] || fail "install-kernel (wrong build id): $out"
labx exec 1 '(sleep 1; reboot -f) > /dev/null 2>&1 &' > /dev/null || fail "reboot request"
sleep 3
out=$(labx exec 1 --timeout 180 'uname -r; cat /proc/cmdline') || fail "exec in boot 3: $out"
echo "   boot 3: $(head -n 1 <<< "$out")"
[[ $(head -n 1 <<< "$out") == "$default_release" ]] || fail "boot 3 runs $(head -n 1 <<< "$out"), not the default $default_release"
[[ $out != *tlbfleet.build=* ]] || fail "boot 3's command line has a build tag: $out"
grep -q "kernel request refused: the bzImage of artifact $id has sha256 $build_id, not the build id $bad" \
  "$dir/run/vm1.supervisor.log" || fail "the supervisor's log does not say why it refused"
# Refused or not, the agent journaled the entry: carried, so that it reports the mismatch.
check_state "$dir/kernel-entries.2" "$dir/journal.3" "boot 3"

# --- a guest not started with --artifacts ---------------------------------------------------
step "install-kernel without tlbfleet.artifacts=1"
out=$(labx exec 1 "rm /run/tlbfleet-lab-artifacts; $env /sbin/tlbfleet-install-kernel; echo status=\$?") || true
[[ $out == *status=1* && $out == *"lab up --artifacts"* ]] || fail "install-kernel outside --artifacts: $out"

# --- boot 4: a plain reboot: kernel-entries stays, the journal does not ---------------------
step "plain reboot"
labx exec 1 '(sleep 1; reboot -f) > /dev/null 2>&1 &' > /dev/null || fail "reboot request"
sleep 3
out=$(labx exec 1 --timeout 180 'uname -r') || fail "exec in boot 4: $out"
[[ $out == "$default_release" ]] || fail "boot 4 runs $out, not the default $default_release"
check_state "$dir/kernel-entries.2" "" "boot 4"

step "PASS"
