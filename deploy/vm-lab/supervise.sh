# shellcheck shell=bash
# shellcheck disable=SC2154,SC2034  # out, script_dir, die, say, run_dir, qemu_alive: from lab
# The lab's supervisors and watchdog (sourced by deploy/vm-lab/lab; docs/vm-lab.md, "Hangs under
# kprobes (two vCPUs)" and "Supervisor and watchdog").
#
# Every guest runs under a supervisor, `lab __supervise vmN`, started by `lab up` in its own
# session. It runs QEMU as its child (not -daemonize) and
#   - restarts QEMU when it dies unexpectedly (killed, crashed: any exit but status 0, which is a
#     guest that powered off or a QEMU told to quit);
#   - resets a guest whose heartbeat stops (the watchdog): the guest prints a line on its third
#     serial port, ttyS2 = run/vmN.heartbeat, every 5 s (/sbin/tlbfleet-heartbeat); when the
#     file has not grown for the bound (lab up --watchdog S, default 120 s; 0 turns it off),
#     the supervisor records where the vCPUs are (QEMU monitor: RIP, flags, the instruction) in
#     its log and kills QEMU (SIGKILL), then boots the guest again like any other restart;
#   - stops when run/vmN.stop exists (`lab down`), taking its QEMU down with it.
# Plain guests keep QEMU across their own reboots (no -no-reboot); catalogue guests
# (catalogue.sh) run with -no-reboot and their supervisor picks the next boot's entry; so do
# plain guests started with --artifacts (artifacts.sh), whose supervisor boots the kernel
# built from source the guest asked for, once.
#
# Files (run/): vmN.supervisor.log (one line per event, UTC), vmN.restarts (one line per restart:
# "TIME CAUSE"), vmN.heartbeat, vmN.hmp.in/.out (a second QEMU monitor on FIFOs, so plain bash
# can query it), vmN.reset (written by `lab reset`, so the kill is logged as a reset).

# How long QEMU may run without a heartbeat before the watchdog resets the guest: boot included
# (QEMU start to /init is 4-9 s here, 30 s at load 14) and a reboot inside the guest.
default_watchdog=120

# Appends a line to guest $1's console log (run/vmN.log), on a line of its own, so that what
# the lab did to a guest reads in order with what the guest said.
console_note() {
  local file
  file=$(run_dir)/$1.log
  shift
  [[ -s $file && -n $(tail -c 1 "$file") ]] && echo >> "$file"
  echo "tlbfleet-lab: $(date -u +%FT%TZ) $*" >> "$file"
}

# Logs one line to the supervisor log of guest $1.
sup_log() {
  local name=$1
  shift
  echo "$(date -u +%FT%TZ) $*" >> "$(run_dir)/$name.supervisor.log"
}

# True when the supervisor of guest $1 is alive.
supervisor_alive() {
  local pidfile pid
  pidfile=$(run_dir)/$1.supervisor.pid
  [[ -f $pidfile ]] || return 1
  pid=$(cat "$pidfile" 2>/dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ ]] && grep -qa __supervise "/proc/$pid/cmdline" 2>/dev/null
}

# Runs the QEMU monitor commands $2... on guest $1's FIFO monitor (run/vmN.hmp.in/.out) and
# prints what QEMU answered, without the prompt and the line editor's echo. Returns 1 when
# the monitor is not there or does not answer within 5 s. After each command goes a command
# the monitor does not know, "tlbfleet-end-K": its error line marks the end of the answer.
hmp() {
  local name=$1 base fd lock line c k=0 ok=1
  shift
  base=$(run_dir)/$name
  [[ -p $base.hmp.in && -p $base.hmp.out ]] || return 1
  # One user at a time: answers come back on one shared pipe.
  exec {lock}> "$base.hmp.lock"
  flock -w 10 "$lock" || return 1
  exec {fd}<> "$base.hmp.out"
  # Drop what nobody read (the greeting, answers to an earlier user that gave up).
  while IFS= read -r -t 0.2 -u "$fd" line; do :; done
  for c in "$@"; do
    k=$((k + 1))
    printf '%s\ntlbfleet-end-%s\n' "$c" "$k" > "$base.hmp.in"
    ok=0
    # readline mode echoes each command with cursor escapes, then the answer, then "(qemu) ".
    while IFS= read -r -t 5 -u "$fd" line; do
      line=${line//$'\r'/}
      if [[ $line == *"unknown command: 'tlbfleet-end-$k'"* ]]; then ok=1; break; fi
      [[ $line == *$'\e'* || $line == '(qemu) '* || -z $line ]] && continue
      printf '%s\n' "$line"
    done
    ((ok)) || break
  done
  exec {fd}<&- {lock}>&-
  ((ok))
}

# Prints one line per vCPU of guest $1 ($2 vCPUs): its RIP in 3 samples 0.3 s apart (a vCPU
# that loops shows the loop), its flags with IF, the interrupt flag, spelled out, and the
# instruction at the last RIP. Stops the VM (`stop`) after the samples, so that the last one
# and its instruction agree: only for a guest about to be killed.
vcpu_snapshot() {
  local name=$1 smp=$2 k i regs
  local -a rips=() rfls=()
  for ((k = 0; k < 3; k++)); do
    ((k == 0)) || sleep 0.3
    ((k < 2)) || hmp "$name" stop > /dev/null || true
    regs=$(hmp "$name" "info registers -a" 2>/dev/null) || { echo "no answer from the QEMU monitor"; return 0; }
    # "CPU#0" starts each vCPU's block; RIP= and RFL= share a line in it.
    while read -r i rip rfl; do
      rips[i]+="${rips[i]:+ }$rip"
      rfls[i]=$rfl
    done < <(awk '/^CPU#[0-9]+/ { sub(/^CPU#/, ""); cpu = $1 + 0 }
                  /RIP=/ { match($0, /RIP=[0-9a-f]+/); r = substr($0, RSTART + 4, RLENGTH - 4)
                           match($0, /RFL=[0-9a-f]+/); f = substr($0, RSTART + 4, RLENGTH - 4)
                           print cpu, r, f }' <<< "$regs")
  done
  for ((i = 0; i < smp; i++)); do
    local last=${rips[i]##* } ifs="IF ?" insn=""
    if [[ -n ${rfls[i]:-} ]]; then
      if (((0x${rfls[i]} & 0x200) != 0)); then ifs="interrupts on"; else ifs="interrupts off"; fi
    fi
    if [[ -n $last ]]; then
      insn=$(hmp "$name" "x/1i 0x$last" 2>/dev/null | grep -m 1 '^0x' | tr -s ' ') || true
    fi
    echo "vCPU $i: RIP ${rips[i]:-?} RFL=${rfls[i]:-?} ($ifs): ${insn:-?}"
  done
}

# run_qemu NAME WATCHDOG SMP QEMU-ARGS...: runs QEMU for guest NAME in the background and
# watches it until it exits (see the header). Sets qemu_status (its exit status), qemu_beats
# (how many times the heartbeat file grew) and qemu_end: exited, watchdog, reset (`lab reset`
# killed it) or stop (`lab down`).
run_qemu() {
  local name=$1 watchdog=$2 smp=$3 run base
  shift 3
  run=$(run_dir)
  base=$run/$name
  rm -f "$base.pid" "$base.reset" "$base.hmp.in" "$base.hmp.out" "$base.qemu-status"
  mkfifo -m 0600 "$base.hmp.in" "$base.hmp.out"
  : > "$base.heartbeat"
  # QEMU runs in a subshell that waits for it and writes its exit status: bash's report of a
  # child killed by a signal ("line N: PID Killed qemu-system-x86_64 ...") goes to that
  # subshell's stderr, /dev/null, instead of the log. QEMU's own output goes to the log.
  (
    qemu-system-x86_64 "$@" \
      -chardev "file,id=heartbeat,path=$base.heartbeat,append=on" -serial chardev:heartbeat \
      -chardev "pipe,id=hmp,path=$base.hmp" -mon chardev=hmp,mode=readline \
      -pidfile "$base.pid" >> "$base.supervisor.log" 2>&1 &
    echo $! > "$base.pid"   # at once; QEMU writes the same pid there once it is up
    status=0
    wait $! || status=$?
    echo "$status" > "$base.qemu-status"
  ) 2>/dev/null &
  local waiter=$! qpid="" size=0 new_size last_beat=$SECONDS beats=0 t max_gap=0
  for ((t = 0; t < 100 && ${#qpid} == 0; t++)); do
    qpid=$(cat "$base.pid" 2>/dev/null) || true
    [[ -n $qpid ]] || sleep 0.05
  done
  sup_log "$name" "QEMU pid ${qpid:-?} started"
  qemu_end=exited
  while kill -0 "$waiter" 2>/dev/null; do
    sleep 1
    if [[ -e $run/$name.stop ]]; then
      # lab down: take QEMU down too (lab down also signals it; whoever is first).
      qemu_end=stop
      kill -TERM "$qpid" 2>/dev/null || true
      t=0
      while kill -0 "$qpid" 2>/dev/null && ((t < 50)); do sleep 0.1; t=$((t + 1)); done
      kill -KILL "$qpid" 2>/dev/null || true
      break
    fi
    new_size=$(stat -c %s "$base.heartbeat" 2>/dev/null || echo 0)
    if ((new_size != size)); then
      size=$new_size
      # The longest silence, boot included (the first beat counts from QEMU's start): what
      # the watchdog's bound must stay above.
      ((SECONDS - last_beat > max_gap)) && max_gap=$((SECONDS - last_beat))
      last_beat=$SECONDS
      beats=$((beats + 1))
      # One line every 5 s is 500 KB a day; start the file again now and then. QEMU opened it
      # with O_APPEND, so its next line lands at the new end.
      if ((size > 1048576)); then : > "$base.heartbeat"; size=0; fi
    fi
    if ((watchdog > 0 && SECONDS - last_beat >= watchdog)) && [[ ! -e $base.reset ]]; then
      local last
      last=$(tail -n 1 "$base.heartbeat" 2>/dev/null | tr -d '\r' | awk '{ print $2 }') || true
      if ((beats == 0)); then
        sup_log "$name" "watchdog: no heartbeat within ${watchdog} s of QEMU's start (the guest did not boot)"
      else
        sup_log "$name" "watchdog: no heartbeat for ${watchdog} s (the last at guest uptime ${last:-?} s)"
      fi
      local snap
      snap=$(vcpu_snapshot "$name" "$smp") || true
      while IFS= read -r t; do sup_log "$name" "watchdog: $t"; done <<< "$snap"
      console_note "$name" "watchdog: no heartbeat for ${watchdog} s; resetting the guest (QEMU killed, booted again)"
      sup_log "$name" "watchdog: killing QEMU pid $qpid"
      qemu_end=watchdog
      kill -KILL "$qpid" 2>/dev/null || true
      break
    fi
  done
  wait "$waiter" || true   # (the lab runs under set -e)
  qemu_status=$(cat "$base.qemu-status" 2>/dev/null) || qemu_status=255
  rm -f "$base.qemu-status"
  qemu_beats=$beats
  sup_log "$name" "QEMU pid $qpid ended ($qemu_end, status $qemu_status); $beats heartbeats, the longest gap ${max_gap} s"
  if [[ $qemu_end == exited && -e $base.reset ]]; then
    qemu_end=reset
  fi
  rm -f "$base.reset"
}

# --- The agent's state across reboots of a -no-reboot guest ----------------------------------
# Each boot of an --artifacts guest is a new QEMU with a fresh initramfs, so the agent's state
# dir (/var/lib/tlbfleet-agent) starts empty again. /sbin/tlbfleet-install-kernel sends what
# the agent needs to recognise the boot it asked for, as lines on ttyS1 (run/vmN.ctl)
#   tlbfleet-state NAME SHA256 BASE64
# and the supervisor hands it back to the guest by appending a small cpio archive holding
# var/lib/tlbfleet-agent/NAME to the next boot's initramfs (the kernel unpacks concatenated
# archives, later files over earlier ones; QEMU's -initrd takes one file: run/vmN.initrd).
#   kernel-entries       kept in run/vmN.state/ and carried into every later boot (the
#                        agent keeps the newest 8 entries itself); a newer copy replaces it;
#   boot-entry-journal   carried into the next boot only: it speaks for the first boot after
#                        the one the agent left, and the "landed" line the agent adds to it
#                        in that boot never reaches the host.
# `lab up` removes run/vmN.state (a fresh guest).
carried_state_kept=(kernel-entries)
carried_state_once=(boot-entry-journal)

# Reads the state lines guest $1 wrote on ttyS1 during the boot that just ended (the last good
# line of each name; a line whose content does not match its sha256, e.g. cut short by the
# reboot, is dropped with a log line) into run/$1.state/ (kept) and run/$1.state/once/ (the
# next boot only; emptied first).
state_collect() {
  local name=$1 run dir f line sum b64 got what
  run=$(run_dir)
  dir=$run/$name.state
  rm -rf "$dir/once"
  mkdir -p "$dir/once"
  for f in "${carried_state_kept[@]}" "${carried_state_once[@]}"; do
    line=$(tr -d '\r' < "$run/$name.ctl" 2>/dev/null |
           grep -a -o -E "tlbfleet-state $f [0-9a-f]{64} [A-Za-z0-9+/=]*" | tail -n 1) || true
    [[ -n $line ]] || continue
    read -r _ _ sum b64 <<< "$line"
    what=once/$f
    if [[ " ${carried_state_kept[*]} " == *" $f "* ]]; then what=$f; fi
    got=""
    if base64 -d <<< "$b64" > "$dir/$what.tmp" 2>/dev/null; then
      got=$(sha256sum < "$dir/$what.tmp" | cut -d' ' -f1)
    fi
    if [[ $got != "$sum" ]]; then
      rm -f "$dir/$what.tmp"
      sup_log "$name" "agent state $f from the guest dropped: its content does not match its sha256 (cut short?)"
      continue
    fi
    mv -f "$dir/$what.tmp" "$dir/$what"
    sup_log "$name" "agent state $f from the guest ($(stat -c %s "$dir/$what") bytes) kept for $([[ $what == once/* ]] && echo "the next boot" || echo "every later boot")"
  done
}

# Prints the initramfs guest $1's next boot gets: the lab's ($initrd) when there is no agent
# state to carry, else run/$1.initrd = the lab's + zeros to a 4-byte boundary (where the
# kernel looks for the next archive) + a cpio (newc, owner root) of var/lib/tlbfleet-agent/
# with run/$1.state/'s kept files and once/ files.
state_initrd() {
  local name=$1 run dir root f size
  run=$(run_dir)
  dir=$run/$name.state
  root=$dir/root
  rm -rf "$root"
  mkdir -p "$root/var/lib/tlbfleet-agent"
  for f in "${carried_state_kept[@]}"; do
    if [[ -f $dir/$f ]]; then cp "$dir/$f" "$root/var/lib/tlbfleet-agent/$f"; fi
  done
  for f in "${carried_state_once[@]}"; do
    if [[ -f $dir/once/$f ]]; then cp "$dir/once/$f" "$root/var/lib/tlbfleet-agent/$f"; fi
  done
  if [[ -z $(ls -A "$root/var/lib/tlbfleet-agent") ]]; then
    rm -rf "$root"
    echo "$initrd"
    return 0
  fi
  chmod 0755 "$root/var" "$root/var/lib"
  chmod 0700 "$root/var/lib/tlbfleet-agent"
  chmod 0600 "$root/var/lib/tlbfleet-agent"/*
  size=$(stat -c %s "$initrd") || return 1
  if ! { cat "$initrd" && head -c $(((4 - size % 4) % 4)) /dev/zero &&
         (cd "$root" && find var | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet); } > "$run/$name.initrd.tmp"; then
    rm -f "$run/$name.initrd.tmp"
    return 1
  fi
  mv -f "$run/$name.initrd.tmp" "$run/$name.initrd"
  sup_log "$name" "next boot: the agent state in $run/$name.initrd: $(cd "$root/var/lib/tlbfleet-agent" && echo *)"
  rm -rf "$root"
  echo "$run/$name.initrd"
}

# Records restart cause $2 of guest $1 in run/vmN.restarts (for `lab status`).
note_restart() {
  echo "$(date -u +%FT%TZ) $2" >> "$(run_dir)/$1.restarts"
}

# `lab __supervise vmN`: runs guest vmN as run/vmN.conf (written by `lab up`) says.
cmd_supervise() {
  local name=${1:?} run
  run=$(run_dir)
  local mode=catalogue watchdog=0 tcg_thread=multi
  # shellcheck source=/dev/null
  source "$run/$name.conf"
  if [[ $mode == plain ]]; then
    supervise_plain "$name"
  else
    supervise_catalogue "$name"
  fi
  rm -f "$run/$name.supervisor.pid"
}

# The loop for a plain guest: QEMU without -no-reboot (the guest's own reboots stay inside one
# QEMU), started again when it dies or the watchdog kills it. With an artifact directory
# (lab up --artifacts; artifacts.sh) QEMU runs with -no-reboot instead, what the guest writes
# on ttyS1 is also logged to run/vmN.ctl, and at each reboot the next boot is the kernel built
# from source the guest asked for (once, with its tag on the command line) or the default one.
supervise_plain() {
  local name=$1 started quick=0 silent=0
  local boot_kernel=$kernel boot_kind=$boot boot_release=$release boot_cmdline=$cmdline
  local boot_initrd=$initrd
  local -a reboot_args=() control_log=()
  if [[ -n ${artifacts:-} ]]; then
    reboot_args=(-no-reboot)
    control_log=(",logfile=$run/$name.ctl,logappend=off")
  fi
  while [[ ! -e $run/$name.stop ]]; do
    sup_log "$name" "booting: kernel $boot_release ($boot_kind), $smp vCPUs (tcg thread=$tcg_thread), $mem MB, watchdog ${watchdog} s"
    [[ $boot_kernel == "$kernel" ]] || sup_log "$name" "booting: $boot_kernel with: $boot_cmdline"
    [[ -n ${artifacts:-} ]] && : > "$run/$name.ctl"
    started=$SECONDS
    # -mem-prealloc: the guest's RAM is backed before it boots, so the host's first touch of
    # a page is not timed by the first benchmark iteration that uses it (docs/vm-lab.md).
    # The control channel (`lab exec`): ttyS1 <-> two FIFOs, which QEMU opens read-write, so
    # neither side blocks on open and requests wait in the pipe until the guest reads them.
    run_qemu "$name" "$watchdog" "$smp" \
      -name "$name" \
      -accel "tcg,thread=$tcg_thread" -cpu max -smp "$smp" -m "$mem" -mem-prealloc \
      -nodefaults -no-user-config -display none -vga none \
      -chardev "file,id=console,path=$run/$name.log,append=on" -serial chardev:console \
      -chardev "pipe,id=control,path=$run/$name.control${control_log[0]:-}" -serial chardev:control \
      -monitor "unix:$run/$name.monitor,server=on,wait=off" "${reboot_args[@]}" \
      -kernel "$boot_kernel" -initrd "$boot_initrd" \
      -append "$boot_cmdline" \
      -netdev user,id=net0 -device e1000,netdev=net0,romfile=
    # lab down signals QEMU itself too: a QEMU that ended after the stop file appeared was
    # stopped, whatever its status.
    [[ $qemu_end == stop || -e $run/$name.stop ]] && break
    case $qemu_end in
      watchdog) note_restart "$name" watchdog ;;
      reset)
        sup_log "$name" "QEMU killed by lab reset; booting again"
        note_restart "$name" reset
        ;;
      exited)
        if ((qemu_status == 0)) && [[ -n ${artifacts:-} ]]; then
          # -no-reboot: the guest's own reboot (or power-off: QEMU cannot tell them apart).
          sup_log "$name" "the guest rebooted (QEMU exited with status 0, -no-reboot)"
        elif ((qemu_status == 0)); then
          sup_log "$name" "QEMU exited with status 0 (the guest powered off, or QEMU was told to quit); not restarting"
          break
        else
          sup_log "$name" "QEMU exited with status $qemu_status; booting again"
          note_restart "$name" "exit-$qemu_status"
        fi
        ;;
    esac
    # The next boot: the kernel the guest asked for (artifacts.sh), once; else the default.
    boot_kernel=$kernel boot_kind=$boot boot_release=$release boot_cmdline=$cmdline
    if [[ -n ${artifacts:-} ]]; then
      local asked=0
      artifact_next_boot "$name" "$artifacts" || asked=$?
      if ((asked == 0)); then
        boot_kernel=$next_kernel boot_kind=bzimage boot_release=$next_release
        boot_cmdline="$cmdline $next_tag"
        sup_log "$name" "next boot: $next_what with $next_tag"
        console_note "$name" "next boot: $next_what with $next_tag"
      fi
      # The agent's state for boot entries (sent with the request), into the next boot's
      # initramfs; also when the request was refused: the agent then reports the mismatch.
      # A lab that cannot (disk full) still boots the guest, without the state.
      state_collect "$name" || sup_log "$name" "could not read the agent state the guest sent"
      boot_initrd=$(state_initrd "$name") || {
        sup_log "$name" "could not make run/$name.initrd; the next boot has no agent state"
        boot_initrd=$initrd
      }
    fi
    # A QEMU that cannot even start would spin here: give up after 3 quick exits.
    if ((SECONDS - started < 3)); then quick=$((quick + 1)); else quick=0; fi
    if ((quick >= 3)); then
      sup_log "$name" "QEMU exited at once 3 times; stopping"
      break
    fi
    # Nor should a guest that never boots be reset forever.
    if [[ $qemu_end == watchdog ]] && ((qemu_beats == 0)); then silent=$((silent + 1)); else silent=0; fi
    if ((silent >= 3)); then
      sup_log "$name" "watchdog: 3 boots in a row without a heartbeat; stopping"
      break
    fi
  done
  [[ -e $run/$name.stop ]] && sup_log "$name" "stopped (lab down)"
  return 0
}

# `lab reset N [--system-reset]`: resets guest vmN hard. By default its QEMU is killed
# (SIGKILL) and the supervisor boots the guest again, with the same kernel, command line and
# ids: a machine that lost power. --system-reset asks QEMU for a reset through the monitor
# instead (same QEMU; a catalogue guest's QEMU exits on it, -no-reboot, and is started again).
cmd_reset() {
  local n="" how=kill
  while (($#)); do
    case $1 in
      --system-reset) how=system_reset; shift ;;
      -*) die "reset: unknown option $1" ;;
      *) [[ -z $n ]] || die "reset: more than one guest"; n=$1; shift ;;
    esac
  done
  [[ $n =~ ^(vm)?[1-9][0-9]*$ ]] || die "reset: give a guest number, e.g. lab reset 1"
  local name=vm${n#vm} run base pid
  run=$(run_dir)
  base=$run/$name
  supervisor_alive "$name" ||
    die "reset: $name has no supervisor (not running, or started by an older lab: lab down, lab up)"
  qemu_alive "$base.pid" || die "reset: $name's QEMU is not running (the supervisor is restarting it?)"
  pid=$(cat "$base.pid")
  if [[ $how == system_reset ]]; then
    sup_log "$name" "system_reset through the monitor (lab reset --system-reset)"
    console_note "$name" "lab reset --system-reset"
    # A catalogue guest's QEMU (-no-reboot) exits on it before it answers: that is a reset too.
    if ! hmp "$name" system_reset > /dev/null && qemu_alive "$base.pid" && [[ $(cat "$base.pid") == "$pid" ]]; then
      die "reset: $name's monitor (run/$name.hmp.in) did not answer"
    fi
    say "$name reset through the monitor (system_reset; QEMU pid $pid)"
    return 0
  fi
  echo "lab reset" > "$base.reset"
  console_note "$name" "lab reset: QEMU pid $pid killed"
  kill -KILL "$pid" 2>/dev/null || true
  # Wait for the supervisor to start the next QEMU, so that what follows talks to the new one.
  local t new=""
  for ((t = 0; t < 300; t++)); do
    if qemu_alive "$base.pid" && [[ $(cat "$base.pid") != "$pid" ]]; then
      new=$(cat "$base.pid")
      break
    fi
    supervisor_alive "$name" || break
    sleep 0.1
  done
  [[ -n $new ]] || die "reset: $name's supervisor did not start QEMU again within 30 s: $(tail -n 2 "$base.supervisor.log")"
  say "$name reset: QEMU pid $pid killed; the supervisor booted it again (QEMU pid $new)"
}
