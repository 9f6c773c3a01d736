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

# --- boot 2: the artifact, requested by the guest ------------------------------------------
step "install-kernel + reboot"
env="TLBFLEET_ARTIFACT_ID=$id TLBFLEET_BUILD_ID=$build_id TLBFLEET_BUILD_TAG=$tag TLBFLEET_KERNEL_RELEASE=$release"
out=$(labx exec 1 "$env /sbin/tlbfleet-install-kernel; echo status=\$?") || true
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

# --- boot 3: a request whose build id is not the image's: refused, default kernel ------------
step "install-kernel with a wrong build id + reboot"
bad=$(printf '%064d' 0)
out=$(labx exec 1 "TLBFLEET_ARTIFACT_ID=$id TLBFLEET_BUILD_ID=$bad TLBFLEET_BUILD_TAG=tlbfleet.build=${bad:0:16} /sbin/tlbfleet-install-kernel; echo status=\$?") || true
[[ $out == *status=0* ]] || fail "install-kernel (wrong build id): $out"
labx exec 1 '(sleep 1; reboot -f) > /dev/null 2>&1 &' > /dev/null || fail "reboot request"
sleep 3
out=$(labx exec 1 --timeout 180 'uname -r; cat /proc/cmdline') || fail "exec in boot 3: $out"
echo "   boot 3: $(head -n 1 <<< "$out")"
[[ $(head -n 1 <<< "$out") == "$default_release" ]] || fail "boot 3 runs $(head -n 1 <<< "$out"), not the default $default_release"
[[ $out != *tlbfleet.build=* ]] || fail "boot 3's command line has a build tag: $out"
grep -q "kernel request refused: the bzImage of artifact $id has sha256 $build_id, not the build id $bad" \
  "$dir/run/vm1.supervisor.log" || fail "the supervisor's log does not say why it refused"

# --- a guest not started with --artifacts ---------------------------------------------------
step "install-kernel without tlbfleet.artifacts=1"
out=$(labx exec 1 "rm /run/tlbfleet-lab-artifacts; $env /sbin/tlbfleet-install-kernel; echo status=\$?") || true
[[ $out == *status=1* && $out == *"lab up --artifacts"* ]] || fail "install-kernel outside --artifacts: $out"

step "PASS"
