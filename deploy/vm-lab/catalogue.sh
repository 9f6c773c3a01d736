# shellcheck shell=bash
# shellcheck disable=SC2154,SC2034  # out, cache, agent, gzip_initrd, die, say: from lab
# Real kernels in the microVM lab: a catalogue of boot entries (sourced by deploy/vm-lab/lab).
#
# A catalogue file lists boot entries, one per line: a name, a Debian kernel package, and
# optionally a kernel command line (the rest of the line). '#' starts a comment.
#
#   # name         package                              command line (optional)
#   6.1.0-57       linux-image-6.1.0-57-amd64
#   6.12.117       linux-image-6.12.117+deb12-amd64
#   6.1.0-57-pti   linux-image-6.1.0-57-amd64           pti=on
#
# A package may hold `*`, which matches a version word ([A-Za-z0-9.+~]*, no hyphen, so
# `linux-image-6.1.0-*-amd64` matches 6.1.0-57-amd64 but not 6.1.0-57-cloud-amd64): the
# newest such package apt knows, else the newest already cached.
#
# `lab catalogue FILE` fetches each package once into the cache (only what a guest needs:
# the kernel image, its ELF vmlinux, the NIC module) and builds one initramfs holding every
# release's modules. `lab up N --catalogue FILE [--entry NAME]` boots guests under a
# supervisor: QEMU runs with -no-reboot, so a guest's reboot ends it, and the supervisor
# starts it again with the kernel and command line of the entry the guest asked for on its
# second serial port (/sbin/tlbfleet-boot-entry NAME), or the same entry if it asked for none.

# Reads catalogue $1 into cat_names, cat_packages, cat_cmdlines; dies naming the line.
cat_names=()
cat_packages=()
cat_cmdlines=()
parse_catalogue() {
  local file=$1 line n=0 name pkg rest word
  [[ -f $file ]] || die "catalogue $file: no such file"
  cat_names=()
  cat_packages=()
  cat_cmdlines=()
  while IFS= read -r line || [[ -n $line ]]; do
    n=$((n + 1))
    line=${line%%#*}
    [[ $line =~ ^[[:space:]]*$ ]] && continue
    read -r name pkg rest <<< "$line"
    [[ $name =~ ^[A-Za-z0-9][A-Za-z0-9._+-]*$ ]] ||
      die "catalogue $file:$n: entry name '$name' must be letters, digits and . _ + -"
    [[ -n $pkg ]] || die "catalogue $file:$n: entry '$name' names no kernel package"
    [[ $pkg =~ ^linux-image-[0-9][A-Za-z0-9.+~*-]*$ ]] ||
      die "catalogue $file:$n: '$pkg' is not a Debian kernel package (linux-image-<version>-<flavour>)"
    for word in $rest; do
      [[ $word =~ ^[A-Za-z0-9._,:=+/-]+$ ]] ||
        die "catalogue $file:$n: command-line word '$word' has a character the lab does not pass (allowed: letters, digits, . _ , : = + / -)"
      [[ $word == tlbfleet.entry=* ]] &&
        die "catalogue $file:$n: tlbfleet.entry= is set by the lab"
    done
    local existing
    for existing in "${cat_names[@]}"; do
      [[ $existing != "$name" ]] || die "catalogue $file:$n: entry '$name' appears twice"
    done
    cat_names+=("$name")
    cat_packages+=("$pkg")
    # The words, single-spaced.
    local words=()
    read -r -a words <<< "$rest"
    cat_cmdlines+=("${words[*]}")
  done < "$file"
  ((${#cat_names[@]} > 0)) || die "catalogue $file: no entries"
}

# Prints package $1 with its `*` resolved (see the header); dies when nothing matches.
resolve_package() {
  local pkg=$1 regex candidates
  if [[ $pkg != *'*'* ]]; then
    echo "$pkg"
    return
  fi
  regex=$(sed -e 's/[.+]/\\&/g' -e 's/\*/[A-Za-z0-9.+~]*/g' <<< "$pkg")
  candidates=$(apt-cache pkgnames linux-image- 2>/dev/null | grep -E "^${regex}$" || true)
  if [[ -z $candidates ]]; then
    candidates=$(find "$cache/kernel" -mindepth 2 -maxdepth 2 -name .complete -printf '%h\n' 2>/dev/null |
                 xargs -r -n 1 basename | grep -E "^${regex}$" || true)
  fi
  [[ -n $candidates ]] || die "no kernel package matches $pkg (apt-cache pkgnames, nor the cache $cache/kernel)"
  sort -V <<< "$candidates" | tail -n 1
}

# Prints the value of modinfo field $2 of the plain module file $1.
module_field() {
  tr '\0' '\n' < "$1" | awk -v f="$2=" 'index($0, f) == 1 { print substr($0, length(f) + 1); exit }'
}

# Fetches kernel package $1 into $cache/kernel/<package>/ unless it is there (a full unpack
# made by `lab build` will do too); prints that directory. Only what a guest needs is kept:
# boot/vmlinuz-<release>, vmlinux (when the image yields one), the NIC module and its
# dependencies (decompressed), and a modules.dep for them. About 70-130 MB instead of 560.
fetch_kernel_package() {
  local pkg=$1 kdir=$cache/kernel/$1 debs=$cache/debs deb
  if [[ -f $kdir/.complete ]]; then
    echo "$kdir"
    return
  fi
  mkdir -p "$debs"
  deb=$(find "$debs" -maxdepth 1 -name "${pkg}_*.deb" | sort -V | tail -n 1)
  if [[ -z $deb ]]; then
    say "downloading $pkg into $debs"
    local apt_opts=()
    [[ $(id -u) -eq 0 ]] && apt_opts=(-o APT::Sandbox::User=root)
    if ! (cd "$debs" && apt-get "${apt_opts[@]}" -q download "$pkg") >&2; then
      say "apt-get download $pkg failed; running apt-get update once and retrying"
      as_root apt-get update -q >&2 || true
      (cd "$debs" && apt-get "${apt_opts[@]}" -q download "$pkg") >&2 ||
        die "apt-get download $pkg failed (is it in the archive? apt-cache policy $pkg)"
    fi
    deb=$(find "$debs" -maxdepth 1 -name "${pkg}_*.deb" | sort -V | tail -n 1)
    [[ -n $deb ]] || die "no ${pkg}_*.deb in $debs after apt-get download"
  fi
  say "unpacking the kernel and NIC module of $(basename "$deb")"
  rm -rf "$kdir.tmp"
  mkdir -p "$kdir.tmp"
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$kdir.tmp" --wildcards './boot/vmlinuz-*' ||
    die "$deb holds no boot/vmlinuz-*"
  local release
  release=$(find "$kdir.tmp/boot" -name 'vmlinuz-*' -printf '%f\n' | head -n 1)
  release=${release#vmlinuz-}
  [[ -n $release ]] || die "$deb holds no boot/vmlinuz-<release>"
  local moddir=$kdir.tmp/lib/modules/$release todo=("${guest_modules[@]}") done_mods=" " m file dep
  : > "$kdir.tmp/modules.dep.tmp"
  while ((${#todo[@]} > 0)); do
    m=${todo[0]}
    todo=("${todo[@]:1}")
    [[ $done_mods == *" $m "* ]] && continue
    done_mods+="$m "
    dpkg-deb --fsys-tarfile "$deb" |
      tar -x -C "$kdir.tmp" --wildcards "./lib/modules/$release/kernel/*/$m.ko*" 2>/dev/null ||
      die "$deb has no module $m"
    file=$(find "$moddir/kernel" -name "$m.ko*" | head -n 1)
    case $file in
      *.xz) xz -d "$file"; file=${file%.xz} ;;
      *.zst) zstd -q -d --rm "$file"; file=${file%.zst} ;;
      *.gz) gzip -d "$file"; file=${file%.gz} ;;
    esac
    local deps=() rel_deps=""
    IFS=, read -r -a deps <<< "$(module_field "$file" depends)"
    for dep in "${deps[@]}"; do
      [[ -n $dep ]] && todo+=("$dep") && rel_deps+=" @$dep@"
    done
    echo "${file#"$moddir/"}:$rel_deps" >> "$kdir.tmp/modules.dep.tmp"
  done
  # modules.dep with paths: replace each @dep@ by the dependency's file.
  while IFS= read -r line; do
    local out_line=${line%%:*}: word
    for word in ${line#*:}; do
      dep=${word//@/}
      out_line+=" $(cd "$moddir" && find kernel -name "$dep.ko" | head -n 1)"
    done
    echo "$out_line"
  done < "$kdir.tmp/modules.dep.tmp" > "$moddir/modules.dep"
  rm -f "$kdir.tmp/modules.dep.tmp"
  if ! extract_vmlinux "$kdir.tmp/boot/vmlinuz-$release" "$kdir.tmp/vmlinux"; then
    say "could not extract an ELF vmlinux from vmlinuz-$release; its guests boot the bzImage (slower)"
  fi
  echo "$release" > "$kdir.tmp/release"
  touch "$kdir.tmp/.complete" "$kdir.tmp/.slim"
  rm -rf "$kdir"
  mv "$kdir.tmp" "$kdir"
  # The slim directory is the cache; the package is not needed again.
  [[ -n ${TLBFLEET_VM_LAB_KEEP_DEBS:-} ]] || rm -f "$deb"
  echo "$kdir"
}

# `lab catalogue FILE [--gzip]`: fetch every entry's kernel, build one initramfs for all, and
# write $out/catalogue: "name release boot kernel-image command-line..." per entry.
cmd_catalogue() {
  local file=""
  while (($#)); do
    case $1 in
      --gzip) gzip_initrd=1; shift ;;
      -*) die "catalogue: unknown option $1" ;;
      *) [[ -z $file ]] || die "catalogue: more than one file"; file=$1; shift ;;
    esac
  done
  [[ -n $file ]] || die "catalogue: give the catalogue file, e.g. lab catalogue deploy/vm-lab/kernels.catalogue"
  parse_catalogue "$file"
  cmd_deps
  [[ -x $agent ]] || die "no agent binary at $agent (build it: cmake --build build --target tlbfleet-agent; or pass --agent PATH)"
  local root=$out/initramfs.root i kdir release boot image resolved=() seen=" " mods
  make_root "$root"
  mkdir -p "$root/etc/tlbfleet-lab"
  : > "$root/etc/tlbfleet-lab/entries"
  local pkg
  for i in "${!cat_names[@]}"; do
    pkg=$(resolve_package "${cat_packages[$i]}")
    kdir=$(fetch_kernel_package "$pkg")
    release=$(cat "$kdir/release")
    if [[ -f $kdir/vmlinux ]]; then
      boot=pvh image=$kdir/vmlinux
    else
      boot=bzimage image=$kdir/boot/vmlinuz-$release
    fi
    resolved+=("${cat_names[$i]} $release $boot $image ${cat_cmdlines[$i]}")
    echo "${cat_names[$i]} $release ${cat_cmdlines[$i]}" >> "$root/etc/tlbfleet-lab/entries"
    if [[ $seen != *" $release "* ]]; then
      seen+="$release "
      mods=$(add_modules "$root" "$kdir")
      say "kernel  $release ($boot boot, $image; modules: $mods)"
    fi
  done
  pack_root "$root" "catalogue $(cd "$(dirname "$file")" && pwd)/$(basename "$file")"
  printf '%s\n' "${resolved[@]}" > "$out/catalogue.tmp"
  mv "$out/catalogue.tmp" "$out/catalogue"
  say "catalogue $out/catalogue: ${cat_names[*]}"
}

# Prints the resolved line of entry $1 ("name release boot image cmdline..."), or fails.
catalogue_entry() {
  awk -v n="$1" '$1 == n { print; found = 1; exit } END { exit !found }' "$out/catalogue"
}

# The supervisor loop of a catalogue guest (`lab __supervise vmN`, supervise.sh): restarts
# QEMU at each reboot with the entry the guest asked for. Settings come from run/vmN.conf
# (written by `lab up`); the entry booted is in run/vmN.entry; a file run/vmN.stop ends the loop
# (`lab down`). run_qemu (supervise.sh) also resets a guest whose heartbeat stopped.
supervise_catalogue() {
  local name=${1:?}
  local entry line release boot image cmdline request started quick=0 silent=0
  entry=$(cat "$run/$name.entry")
  while [[ ! -e $run/$name.stop ]]; do
    line=$(catalogue_entry "$entry") || {
      echo "$(date -u +%FT%TZ) entry '$entry' is not in $out/catalogue; stopping" >> "$run/$name.supervisor.log"
      break
    }
    read -r _ release boot image cmdline <<< "$line"
    : > "$run/$name.ctl"
    echo "$(date -u +%FT%TZ) booting entry $entry: kernel $release ($boot) ${cmdline:-}" >> "$run/$name.supervisor.log"
    started=$(date +%s)
    # -no-reboot: the guest's reboot ends QEMU, and this loop starts the entry it asked for.
    # -mem-prealloc: each boot is a new QEMU whose RAM the host has not touched yet; backed up
    # front, the host's first touch is not timed by the boot's first benchmark iteration.
    run_qemu "$name" "$watchdog" "$smp" \
      -name "$name" \
      -accel "tcg,thread=$tcg_thread" -cpu max -smp "$smp" -m "$mem" -mem-prealloc \
      -nodefaults -no-user-config -display none -vga none -no-reboot \
      -chardev "file,id=console,path=$run/$name.log,append=on" -serial chardev:console \
      -chardev "file,id=control,path=$run/$name.ctl" -serial chardev:control \
      -monitor "unix:$run/$name.monitor,server=on,wait=off" \
      -kernel "$image" -initrd "$initrd" \
      -append "$base_cmdline tlbfleet.entry=$entry${cmdline:+ $cmdline}" \
      -netdev user,id=net0 -device e1000,netdev=net0,romfile=
    [[ $qemu_end == stop || -e $run/$name.stop ]] && break
    case $qemu_end in
      watchdog) note_restart "$name" watchdog ;;
      reset)
        sup_log "$name" "QEMU killed by lab reset; booting again"
        note_restart "$name" reset
        ;;
      exited)
        # Status 0 is the guest's own reboot (-no-reboot); anything else a QEMU that died.
        if ((qemu_status != 0)); then
          sup_log "$name" "QEMU exited with status $qemu_status; booting again"
          note_restart "$name" "exit-$qemu_status"
        fi
        ;;
    esac
    request=$(grep -a -o 'tlbfleet-next-entry [A-Za-z0-9._+-]*' "$run/$name.ctl" | tail -n 1 | cut -d' ' -f2) || true
    if [[ -n $request ]]; then
      if catalogue_entry "$request" > /dev/null; then
        entry=$request
        echo "$entry" > "$run/$name.entry"
      else
        echo "$(date -u +%FT%TZ) the guest asked for unknown entry '$request'; booting $entry again" >> "$run/$name.supervisor.log"
      fi
    fi
    # A kernel that does not even start would spin here: give up after 3 quick exits, or
    # after 3 boots in a row that the watchdog ended before a single heartbeat.
    if (($(date +%s) - started < 3)); then quick=$((quick + 1)); else quick=0; fi
    if ((quick >= 3)); then
      echo "$(date -u +%FT%TZ) QEMU exited at once 3 times; stopping" >> "$run/$name.supervisor.log"
      break
    fi
    if [[ $qemu_end == watchdog ]] && ((qemu_beats == 0)); then silent=$((silent + 1)); else silent=0; fi
    if ((silent >= 3)); then
      sup_log "$name" "watchdog: 3 boots in a row without a heartbeat; stopping"
      break
    fi
  done
  [[ -e $run/$name.stop ]] && sup_log "$name" "stopped (lab down)"
  return 0
}
