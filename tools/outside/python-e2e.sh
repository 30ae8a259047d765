#!/usr/bin/env bash
# Runs the Python client's own e2e tests (kubernetes-client/python
# kubernetes/e2e_test at the tag of Debian's python3-kubernetes) against fresh
# `vkube serve` tenants, one tenant per test, and prints pass/fail per test and
# the totals.
#
#   tools/outside/python-e2e.sh [-k PYTEST_EXPR] [--keep]
#
# The tests come from python-e2e/upstream/ (not committed: public code stays
# out of this repository). If absent they are copied once from a local git
# copy of kubernetes-client/python (PY_CLIENT_GIT, a bare or normal git dir)
# at tag PY_CLIENT_TAG (default: Debian's version). Nothing is downloaded.
#
# Adapted in setup only: the tests import `e2e_test` instead of
# `kubernetes.e2e_test` (Debian's package does not ship it), and KUBECONFIG
# points at the tenant's admin kubeconfig (base.py reads it). No assertion is
# touched. Each test gets PER_TEST_TIMEOUT seconds (default 90): tests that
# wait for a pod to run never end on a tenant without nodes.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh"

expr=""
keep=false
while (($#)); do
  case "$1" in
    -k) expr="$2"; shift ;;
    --keep) keep=true ;;
    *) echo "usage: $0 [-k EXPR] [--keep]" >&2; exit 2 ;;
  esac
  shift
done

tag="${PY_CLIENT_TAG:-v$(dpkg-query -W -f='${Version}' python3-kubernetes | sed 's/-[^-]*$//')}"
upstream="$here/python-e2e/upstream/$tag"
if [ ! -d "$upstream/e2e_test" ]; then
  git_dir="${PY_CLIENT_GIT:-/work/.mirror/kubernetes-client+python/repo}"
  if ! git --git-dir="$git_dir" rev-parse -q --verify "$tag^{commit}" >/dev/null 2>&1; then
    echo "python-e2e: no $upstream and no tag $tag in $git_dir (set PY_CLIENT_GIT)" >&2
    exit 2
  fi
  mkdir -p "$upstream"
  git --git-dir="$git_dir" archive "$tag" kubernetes/e2e_test 2>/dev/null | tar -x -C "$upstream" \
    --strip-components=1
  git --git-dir="$git_dir" rev-parse "$tag^{commit}" >"$upstream/COMMIT"
fi

work="$(mktemp -d /tmp/vkube-outside-py.XXXXXX)"
if $keep; then
  trap 'outside::cleanup; rm -f "$work/vkube"' EXIT
else
  trap 'outside::cleanup; rm -rf "$work"' EXIT
fi
outside::snapshot_binary "$work"
cp -r "$upstream/e2e_test" "$work/e2e_test"
# Setup adaptation: the import path of the tests' own package.
sed -i 's/from kubernetes\.e2e_test import/from e2e_test import/' "$work"/e2e_test/*.py
# test_utils.py opens its YAML files as kubernetes/e2e_test/test_yaml/... from
# the working directory (the repository root upstream).
mkdir -p "$work/kubernetes/e2e_test"
ln -s "$work/e2e_test/test_yaml" "$work/kubernetes/e2e_test/test_yaml"

cd "$work"
export PYTHONDONTWRITEBYTECODE=1
mapfile -t tests < <(/usr/bin/python3 -m pytest -p no:cacheprovider --collect-only -q \
  ${expr:+-k "$expr"} e2e_test 2>/dev/null | grep '::')
per_test="${PER_TEST_TIMEOUT:-90}"
pass=0 fail=0 timeout_n=0
failed=()
echo "python-e2e: ${#tests[@]} tests from kubernetes-client/python $tag ($(cat "$upstream/COMMIT"))"
echo "python-e2e: vkube $("$VKUBE" version 2>/dev/null | head -1), git $(git -C "$OUTSIDE_ROOT" rev-parse --short HEAD)"
for t in "${tests[@]}"; do
  tdir="$work/t$((pass + fail + timeout_n))"
  outside::start_tenant "$tdir"
  set +e
  KUBECONFIG="$TENANT_KUBECONFIG" timeout -k 5 "$per_test" /usr/bin/python3 -m pytest \
    -p no:cacheprovider -q -x "$t" >"$tdir/pytest.out" 2>&1
  rc=$?
  set -e
  outside::stop_tenant
  if [ $rc -eq 0 ]; then
    pass=$((pass + 1)); echo "PASS $t"
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    timeout_n=$((timeout_n + 1)); failed+=("$t"); echo "TIMEOUT $t (${per_test}s)"
  else
    fail=$((fail + 1)); failed+=("$t")
    echo "FAIL $t: $(grep -E '^E  ' "$tdir/pytest.out" | head -3 | sed 's/^E *//' | tr '\n' ' ' | cut -c1-300)"
  fi
  cp "$tdir/pytest.out" "$work/$(echo "$t" | tr '/:' '__').log" 2>/dev/null || true
done
echo "python-e2e: passed $pass of ${#tests[@]} (failed $fail, timed out $timeout_n)"
$keep && echo "python-e2e: logs kept in $work"
[ $((fail + timeout_n)) -eq 0 ]
