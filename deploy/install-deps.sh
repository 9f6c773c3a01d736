#!/usr/bin/env bash
# Installs every build and test dependency of tlbfleet from Debian 12's archive.
# Idempotent: packages already present are skipped, and apt-get update runs only when
# something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git clang-format
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libsqlite3-dev sqlite3
  libboost-dev libboost-system-dev libboost-math-dev
  libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev
  libtracefs-dev libtraceevent-dev libhwloc-dev libcpuid-dev
  libssl-dev libsystemd-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  util-linux procps
  qemu-system-x86 busybox-static cpio xz-utils gzip binutils
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  sudo=sudo
else
  sudo=
fi
echo "install-deps: installing ${#missing[@]} packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
