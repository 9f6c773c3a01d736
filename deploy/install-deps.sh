#!/usr/bin/env bash
# Installs every build and test dependency of tlbfleet from Debian 12's archive.
# Idempotent: packages already present are skipped, and apt-get update runs only when
# something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git clang-format
  ccache  # CMakeLists.txt compiles through it: a rebuild in a fresh clone is mostly cache hits
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libsqlite3-dev sqlite3
  libboost-dev libboost-system-dev libboost-math-dev
  libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev
  libtracefs-dev libtraceevent-dev libhwloc-dev libcpuid-dev
  libssl-dev libsystemd-dev systemd  # sd_notify; systemd-analyze verify of deploy/systemd
  prometheus-cpp-dev prometheus  # metrics (prometheus-cpp); promtool and the server in tests
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev  # the fuzz preset: libFuzzer, ASan + UBSan under clang
  util-linux procps
  qemu-system-x86 busybox-static cpio xz-utils zstd gzip binutils
  bc flex bison libelf-dev ccache linux-source-6.1  # the vm lab's own kernels (lab source, lab kernel)
  debootstrap lintian  # tests/package: a clean Debian 12 root for the .debs, and their lint
  chromium  # the dashboard's browser tests (Playwright drives it headless; no browser download)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

# The dashboard (dashboard/) needs Node >= 20.19 and npm, which Debian 12 does not ship
# (its nodejs is 18): they come from the machine's own Node installation. Its npm packages are
# pinned in dashboard/package-lock.json; `npm ci` here fills npm's cache so that the build's
# own `npm ci --prefer-offline` (cmake -DTLBFLEET_DASHBOARD=ON) needs no network.
dashboard_npm() {
  local repo node_version
  repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "install-deps: node/npm not found: the dashboard will not be built (needs Node >= 20.19)"
    return 0
  fi
  node_version=$(node --version)
  if ! node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a===20&&b>=19)?0:1)'; then
    echo "install-deps: node $node_version is older than 20.19: the dashboard will not be built"
    return 0
  fi
  # Skip when node_modules already matches the lock file (npm writes this copy on install).
  if cmp -s "$repo/dashboard/package-lock.json" "$repo/dashboard/node_modules/.package-lock.json" 2>/dev/null ||
     [[ "$repo/dashboard/node_modules/.package-lock.json" -nt "$repo/dashboard/package-lock.json" ]]; then
    echo "install-deps: dashboard npm packages already installed (node $node_version)"
    return 0
  fi
  echo "install-deps: npm ci in dashboard/ (node $node_version)"
  (cd "$repo/dashboard" && npm ci --no-audit --no-fund --loglevel=error)
}

# deploy/k8s/validate: kubernetes-models (the Kubernetes API's schemas) for the manifests'
# validation test, pinned in its package-lock.json. Skipped like the dashboard without node.
k8s_npm() {
  local dir
  dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/k8s/validate"
  command -v npm >/dev/null || { echo "install-deps: npm not found: no k8s manifest validation"; return 0; }
  if cmp -s "$dir/package-lock.json" "$dir/node_modules/.package-lock.json" 2>/dev/null ||
     [[ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]]; then
    return 0
  fi
  echo "install-deps: npm ci in deploy/k8s/validate"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
}

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages already installed"
  dashboard_npm
  k8s_npm
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
dashboard_npm
k8s_npm
