#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz with clang, ASan and UBSan in
# build-fuzz/, and runs each for a while (docs/fuzzing.md).
#
#   tools/fuzz.sh [--time SECONDS] [--keep-going] [--build-only] [NAME...]
#
# --time        seconds per harness (default 60); harnesses run one at a time
# --keep-going  libFuzzer's fork mode: record a crash, an OOM or a timeout in
#               build-fuzz/artifacts/ and go on fuzzing (default: stop at the first)
# --build-only  build, do not run
# NAME          harnesses to build and run (default: all of tests/fuzz/fuzz_*.cpp)
#
# Grown corpora are kept in build-fuzz/corpus/<name>/, crashes in
# build-fuzz/artifacts/, logs in build-fuzz/logs/. The build holds
# /tmp/vkube-build.lock (shared with the other builds of this machine) and
# fuzzing runs at nice 19, one process.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build-fuzz"
seconds=60
keep_going=0
build_only=0
names=()
while [ $# -gt 0 ]; do
  case "$1" in
    --time) seconds="$2"; shift 2 ;;
    --keep-going) keep_going=1; shift ;;
    --build-only) build_only=1; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) names+=("$1"); shift ;;
  esac
done
if [ ${#names[@]} -eq 0 ]; then
  for f in "$root"/tests/fuzz/fuzz_*.cpp; do
    n=$(basename "$f" .cpp); names+=("${n#fuzz_}")
  done
fi

# clang and its libFuzzer/sanitizer runtimes, from Debian's packages.
if ! command -v clang++ >/dev/null ||
   ! compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update -q
  $sudo apt-get install -y -q clang libclang-rt-14-dev
fi

sanitize="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS="-O1 -gline-tables-only -fno-omit-frame-pointer $sanitize" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DVKUBE_FUZZ=ON -DVKUBE_WERROR=OFF -DVKUBE_BUILD_BENCH=OFF -DVKUBE_STATIC_DEPS=OFF
fi
targets=()
for n in "${names[@]}"; do targets+=("fuzz_$n"); done
# -k 0: a harness whose library does not build today must not keep the
# others from running; it is reported and skipped below.
build_status=0
flock /tmp/vkube-build.lock nice -n 10 ninja -C "$build" -j2 -k 0 "${targets[@]}" || build_status=1
[ "$build_only" -eq 1 ] && exit $build_status

mkdir -p "$build/artifacts" "$build/logs"
status=$build_status
for n in "${names[@]}"; do
  if [ ! -x "$build/tests/fuzz/fuzz_$n" ]; then
    echo "== fuzz_$n: not built (see the build errors above), skipped"
    continue
  fi
  corpus="$build/corpus/$n"
  mkdir -p "$corpus"
  args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix="$build/artifacts/$n-")
  dict="$root/tests/fuzz/dict/$n.dict"
  [ -f "$dict" ] && args+=(-dict="$dict")
  [ "$keep_going" -eq 1 ] && args+=(-fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1)
  log="$build/logs/$n.log"
  echo "== fuzz_$n: ${seconds}s, log $log"
  if ! (cd "$build" && nice -n 19 "$build/tests/fuzz/fuzz_$n" "${args[@]}" \
          "$corpus" "$root/tests/fuzz/corpus/$n" >"$log" 2>&1); then
    status=1
    echo "   FOUND a problem: $(grep -m1 -E 'ERROR: |runtime error|invariant failed' "$log" || tail -1 "$log")"
  fi
  # libFuzzer's own summary: executions, and the corpus it grew.
  grep -E '^(Done|stat::number_of_executed_units|#[0-9]+ +DONE)' "$log" | tail -2 | sed 's/^/   /' ||
    true
done
exit $status
