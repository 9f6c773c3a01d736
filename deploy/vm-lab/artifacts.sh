# shellcheck shell=bash
# shellcheck disable=SC2154,SC2034  # out, script_dir, die, say, run_dir, sup_log: from lab
# Kernels built from source in the microVM lab (sourced by deploy/vm-lab/lab; docs/vm-lab.md,
# "Booting kernels built from source").
#
# `lab up N ... --artifacts DIR` starts plain guests whose agent may install a kernel the
# controller hands it (RebootRequest.kernel): the agent runs /sbin/tlbfleet-install-kernel
# (deploy/vm-lab/install-kernel), which writes
#
#   tlbfleet-next-kernel <ARTIFACT_ID> <BUILD_ID> tlbfleet.build=<16 hex>
#
# to the guest's ttyS1, then reboots. QEMU runs with -no-reboot, so the reboot ends it; ttyS1
# is still the control channel (`lab exec`), and QEMU also logs what the guest writes there to
# run/vmN.ctl (chardev logfile=), which this file reads. The supervisor then boots, once, the
# bzImage of that artifact from DIR, the controller's artifact directory (the image never
# crosses the serial line):
#
#   DIR/objects/<ARTIFACT_ID>/manifest        its canonical text; sha256(text) = ARTIFACT_ID
#   DIR/objects/<ARTIFACT_ID>/files/bzImage   the image; sha256 = BUILD_ID, or it is refused
#
# with the guest's usual command line plus the tag. A request that does not hold (no such
# artifact, a manifest or an image whose checksum is wrong, not a bzImage) is refused with its
# reason in the supervisor's log and on the guest's console, and the default kernel boots: the
# agent then finds the release or the tag missing and reports the mismatch. A reboot without
# a request boots the default kernel (Debian's, or lab up --kernel IMAGE).

# Logs why guest $1's kernel request $2... is refused (supervisor log and console).
artifact_refuse() {
  local name=$1
  shift
  sup_log "$name" "kernel request refused: $*; booting the default kernel"
  console_note "$name" "kernel request refused: $*; booting the default kernel"
}

# Reads the last kernel request guest $1 wrote on ttyS1 during the boot that just ended
# (run/$1.ctl: QEMU's log of everything the guest wrote on ttyS1, `lab exec` answers included;
# only a well-formed request line counts) and checks it against the artifact directory $2. On success sets
# next_kernel (a private copy of the image, run/$1.artifact-bzImage), next_release, next_tag
# and next_what (a description for the logs) and returns 0. Returns 1 when there was no
# request, 2 when it was refused (the reason logged).
artifact_next_boot() {
  local name=$1 dir=$2 run line id build tag obj got release
  run=$(run_dir)
  next_kernel="" next_release="" next_tag="" next_what=""
  line=$(tr -d '\r' < "$run/$name.ctl" 2>/dev/null | grep -a -o -E 'tlbfleet-next-kernel [0-9a-f]{64} [0-9a-f]{64} tlbfleet\.build=[0-9a-f]{16}' |
         tail -n 1) || true
  [[ -n $line ]] || return 1
  read -r _ id build tag <<< "$line"
  [[ $id =~ ^[0-9a-f]{64}$ ]] || { artifact_refuse "$name" "artifact id '$id' is not 64 hex digits"; return 2; }
  [[ $build =~ ^[0-9a-f]{64}$ ]] || { artifact_refuse "$name" "build id '$build' is not 64 hex digits"; return 2; }
  [[ $tag =~ ^tlbfleet\.build=[0-9a-f]{16}$ ]] ||
    { artifact_refuse "$name" "build tag '$tag' is not tlbfleet.build=<16 hex digits>"; return 2; }
  obj=$dir/objects/$id
  [[ -f $obj/manifest ]] ||
    { artifact_refuse "$name" "artifact $id is not in $dir (no $obj/manifest)"; return 2; }
  got=$(sha256sum < "$obj/manifest" | cut -d' ' -f1)
  [[ $got == "$id" ]] ||
    { artifact_refuse "$name" "the manifest of artifact $id has sha256 $got, not its id"; return 2; }
  [[ -f $obj/files/bzImage ]] ||
    { artifact_refuse "$name" "artifact $id has no files/bzImage"; return 2; }
  # A private copy, checked after copying: what was checked is what QEMU boots, whatever
  # happens to the store meanwhile (eviction, a quarantine).
  next_kernel=$run/$name.artifact-bzImage
  cp "$obj/files/bzImage" "$next_kernel.tmp" ||
    { artifact_refuse "$name" "could not copy $obj/files/bzImage"; return 2; }
  got=$(sha256sum < "$next_kernel.tmp" | cut -d' ' -f1)
  if [[ $got != "$build" ]]; then
    rm -f "$next_kernel.tmp"
    next_kernel=""
    artifact_refuse "$name" "the bzImage of artifact $id has sha256 $got, not the build id $build the guest asked for"
    return 2
  fi
  mv -f "$next_kernel.tmp" "$next_kernel"
  if ! release=$(kernel_image_release "$next_kernel"); then
    next_kernel=""
    artifact_refuse "$name" "the bzImage of artifact $id is not a bzImage (no version string in its setup header)"
    return 2
  fi
  next_release=$release
  next_tag=$tag
  next_what="artifact $id (build $build, release $release, $(awk '$1 == "commit" { print "commit " $2; exit }' "$obj/manifest"))"
  return 0
}

# `lab builder-config [--out-file FILE] [--source DIR] [--build-dir DIR]`: the agent's
# kernel-sources YAML (docs/kernels.md, "Builders") for the lab's planted repository, so that
# the agent's builder (agent/builder) builds what `lab kernel` builds: config "lab" is
# tinyconfig with deploy/vm-lab/lab-kernel.config appended, then olddefconfig — the same
# .config as kernel-build's tinyconfig + merge_config.sh -m + olddefconfig (compared option
# for option in docs/vm-lab.md). The builder keeps its tree in <build-dir>/lab (a worktree of
# its own, beside kernel-build's src/ and obj/).
cmd_builder_config() {
  local file="" source_dir=${TLBFLEET_LAB_SOURCE_DIR:-/var/cache/tlbfleet-lab/linux} build_dir=""
  while (($#)); do
    case $1 in
      --out-file) file=${2:?--out-file needs a file}; shift 2 ;;
      --source) source_dir=${2:?--source needs a directory}; shift 2 ;;
      --build-dir) build_dir=${2:?--build-dir needs a directory}; shift 2 ;;
      *) die "builder-config: unexpected $1" ;;
    esac
  done
  source_dir=$(realpath -m "$source_dir")
  build_dir=$(realpath -m "${build_dir:-${TLBFLEET_LAB_BUILD_DIR:-$source_dir-build}}")
  # Single-quoted YAML scalars: a path with a quote in it would need escaping; refuse it.
  [[ $source_dir$build_dir$script_dir != *"'"* ]] || die "builder-config: a path holds a quote"
  [[ -d $source_dir/.git ]] ||
    say "builder-config: no repository at $source_dir yet (lab source plants it)"
  local yaml
  yaml=$(cat <<EOF
# The agent's kernel sources for the tlbfleet microVM lab (lab builder-config; docs/vm-lab.md).
# tlbfleet-agent --kernel-sources FILE
sources:
  linux:
    repository: '$source_dir'
    work_dir: '$build_dir'
    arch: x86_64
configs:
  lab:
    base: tinyconfig
    fragments: ['$script_dir/lab-kernel.config']
EOF
)
  if [[ -n $file ]]; then
    mkdir -p "$(dirname "$file")"
    printf '%s\n' "$yaml" > "$file.tmp"
    mv "$file.tmp" "$file"
    say "builder-config: wrote $file"
  else
    printf '%s\n' "$yaml"
  fi
}
