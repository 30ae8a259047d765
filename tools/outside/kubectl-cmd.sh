#!/usr/bin/env bash
# Runs kubernetes' own kubectl command tests (test/cmd/*.sh, the functions
# hack/make-rules/test-cmd.sh runs) against vkube: each function gets a fresh
# `vkube serve` tenant on loopback and its own bash, and the runner prints
# PASS/FAIL per function and the totals.
#
#   tools/outside/kubectl-cmd.sh [FUNCTION...]   (default: every function listed below)
#
# The upstream files live in kubectl-cmd/upstream/ (not committed; see
# kubectl-cmd/README.md for their origin). Only setup is ours
# (kubectl-cmd/harness.sh). PER_TEST_TIMEOUT (default 180 s) bounds a function.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh"
upstream="$here/kubectl-cmd/upstream"
if [ ! -f "$upstream/hack/lib/test.sh" ]; then
  echo "kubectl-cmd: $upstream is missing: untar /work/notes/outside-upstream.tar.gz in tools/outside/ or run tools/outside/fetch-upstream.sh (see kubectl-cmd/README.md)" >&2
  exit 2
fi

# The functions whose files and fixtures are in upstream/, in legacy-script.sh's order.
functions=(
  run_kubectl_version_tests
  run_kubectl_config_set_tests
  run_kubectl_config_set_cluster_tests
  run_kubectl_config_set_credentials_tests
  run_kubectl_local_proxy_tests
  run_clusterroles_tests
  run_role_tests
  run_RESTMapper_evaluation_tests
  run_assert_short_name_tests
  run_assert_singular_name_tests
  run_ambiguous_shortname_tests
  run_explain_crd_with_additional_properties_tests
  run_assert_categories_tests
  run_kubectl_events_tests
  run_kubectl_create_error_tests
  run_kubectl_create_filter_tests
  run_kubectl_create_dry_run_tests
  run_kubectl_create_validate_tests
  run_kubectl_delete_allnamespaces_tests
  run_kubectl_delete_interactive_tests
  run_kubectl_request_timeout_tests
  run_crd_deletion_recreation_tests
  run_job_tests
  run_create_job_tests
  run_daemonset_tests
  run_daemonset_history_tests
  run_persistent_volumes_tests
  run_storage_class_tests
  run_kubectl_explain_tests
  run_swagger_tests
  run_certificates_tests
  run_impersonation_tests
  run_wait_tests
  run_client_config_tests
  run_cluster_management_tests
  run_kubeconfig_impersonate_tests
  run_kubectl_auth_whoami_tests
)
# Upstream functions not run, and why (counted apart; see README.md).
not_run=(
  "run_authorization_tests: posts to the insecure port http://localhost:8080 and authorization.k8s.io/v1beta1 (removed in 1.22)"
  "run_persistent_volume_claims_tests: fixture claim-02.yaml is not in the code index"
  "run_resource_aliasing_tests: fixture statefulset/cassandra/controller.yaml is not in the code index"
  "run_wait_with_non_existence_check_tests: needs kubectl 1.33 (wait --wait-for-creation)"
  "run_kubectl_create_kustomization_directory_tests: fixture kustomize/configmap.yaml is not in the code index"
  "run_save_config_tests: every stored save-config.sh runs \`kubectl run --generator=run/v1\` (flag removed in kubectl 1.21)"
  "run_template_output_tests: the stored template-output.sh creates batch/v1beta1 CronJobs (removed in 1.25) and runs \`kubectl convert\` (removed in 1.21)"
)
(($#)) && functions=("$@")

work="$(mktemp -d /tmp/vkube-outside-kubectl.XXXXXX)"
keep="${KEEP:-false}"
if $keep; then
  trap 'outside::cleanup; rm -f "$work/vkube"' EXIT
else
  trap 'outside::cleanup; rm -rf "$work"' EXIT
fi
printf 'admin-token,admin,admin,"system:masters"\n' >"$work/tokens.csv"
outside::snapshot_binary "$work"
per_test="${PER_TEST_TIMEOUT:-180}"
echo "kubectl-cmd: ${#functions[@]} functions, kubectl $(kubectl version --client -o json | jq -r .clientVersion.gitVersion)"
echo "kubectl-cmd: vkube $("$VKUBE" version 2>/dev/null | head -1), git $(git -C "$OUTSIDE_ROOT" rev-parse --short HEAD)"
pass=0 fail=0
for fn in "${functions[@]}"; do
  tdir="$work/$fn"
  outside::start_tenant "$tdir" --token-auth-file "$work/tokens.csv"
  set +e
  (cd "$upstream" && TENANT_URL="$TENANT_URL" TMPDIR="$tdir" timeout -k 5 "$per_test" \
    bash -c 'source "$1"; set -o errexit -o nounset -o pipefail; "$2"' bash \
    "$here/kubectl-cmd/harness.sh" "$fn") >"$tdir/test.log" 2>&1
  rc=$?
  set -e
  outside::stop_tenant
  if [ $rc -eq 0 ]; then
    pass=$((pass + 1)); echo "PASS $fn"
  else
    fail=$((fail + 1))
    why="$(grep -E 'FAIL|Error|error:|Expected|has not|!!!' "$tdir/test.log" | grep -v '^Successful' | head -3 | tr '\n' ' ' | cut -c1-300 || true)"
    [ -n "$why" ] || why="$(tail -2 "$tdir/test.log" | tr '\n' ' ' | cut -c1-300)"
    if [ $rc -eq 124 ]; then why="timed out after ${per_test}s; $why"; fi
    echo "FAIL $fn: $why"
  fi
done
echo "kubectl-cmd: passed $pass of ${#functions[@]} (failed $fail); not run: ${#not_run[@]}"
for n in "${not_run[@]}"; do echo "  not run: $n"; done
$keep && echo "kubectl-cmd: logs kept in $work"
[ $fail -eq 0 ]
