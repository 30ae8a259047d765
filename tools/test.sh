#!/usr/bin/env bash
# Runs every vkube test: installs and builds what ctest runs first (see
# tools/setup.sh --tests; the benchmarks are not built), then ctest. Extra
# arguments go to ctest (e.g. -R unit, or -L e2e).
#   VKUBE_SANITIZE=1 tools/test.sh   the same under ASan + UBSan
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build_dir=build
setup_args=(--tests)
if [ "${VKUBE_SANITIZE:-0}" = 1 ]; then
  build_dir=build-asan
  setup_args+=(--sanitize)
fi
tools/setup.sh "${setup_args[@]}"
export PATH="$root/.tools/bin:$PATH"
ctest --test-dir "$build_dir" --output-on-failure "$@"
