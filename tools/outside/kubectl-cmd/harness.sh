#!/usr/bin/env bash
# The setup that kubernetes' test/cmd/legacy-script.sh does before it calls a
# test function, redone for a vkube tenant: kubeconfig and kube_flags point at
# the tenant, the field names and image variables the functions read, and the
# few hack/lib helpers they call (logging). Sourced inside one `bash` per test
# function by tools/outside/kubectl-cmd.sh, with TENANT_URL set. Assertions
# come only from upstream's hack/lib/test.sh.

kube::log::status() { echo "+++ [$(date +%H:%M:%S)] $*"; }
kube::log::info() { echo "$*"; }
kube::log::error() { echo "!!! $*" >&2; }
kube::log::error_exit() { echo "!!! $1" >&2; exit "${2:-1}"; }

source hack/lib/test.sh

SECURE_API_PORT="${TENANT_URL##*:}"
CONTEXT=test
SUPPORTED_RESOURCES=("*")
SED=sed
KUBE_TEMP="$(mktemp -d "${TMPDIR:-/tmp}/kubectl-cmd.XXXXXX")"
export HOME="$KUBE_TEMP"
export KUBECONFIG="$KUBE_TEMP/config"

# As upstream's setup(): a token user and an insecure cluster entry, context "test".
kubectl config set-credentials test-admin --token admin-token >/dev/null
kubectl config set-cluster local --insecure-skip-tls-verify --server "$TENANT_URL" >/dev/null
kubectl config set-context "$CONTEXT" --user test-admin --cluster local >/dev/null
kubectl config use-context "$CONTEXT" >/dev/null

# As upstream's runTests() (without --match-server-version: vkube is not the
# same build as kubectl, as with ALLOW_SKEW=1).
kube_flags=('-s' "$TENANT_URL" '--insecure-skip-tls-verify')
kube_flags_without_token=("${kube_flags[@]}")
kube_flags_with_token=("${kube_flags_without_token[@]}" '--token=admin-token')

# test-cmd's kube-apiserver authorizes with AlwaysAllow (legacy-script.sh
# says so at its `auth can-i` checks); a vkube tenant always runs RBAC, so
# every authenticated user (impersonated ones too) is bound to cluster-admin.
kubectl create clusterrolebinding outside-always-allow --clusterrole=cluster-admin \
  --group=system:authenticated >/dev/null

# As hack/make-rules/test-cmd.sh: test-cmd runs no kubelet; it registers a
# Node named 127.0.0.1 (capacity only) that node-management.sh and the
# drain/cordon/taint commands work on.
kubectl create -f - >/dev/null <<'NODE'
{"kind": "Node", "apiVersion": "v1", "metadata": {"name": "127.0.0.1"},
 "status": {"capacity": {"memory": "1Gi"}}}
NODE

create_and_use_new_namespace() {
  local ns_name
  ns_name="namespace-$(date +%s)-${RANDOM}"
  kube::log::status "Creating namespace ${ns_name}"
  kubectl create namespace "${ns_name}"
  kubectl config set-context "${CONTEXT}" --namespace="${ns_name}"
}

IMAGE_NGINX="registry.k8s.io/nginx:1.7.9"
export IMAGE_DEPLOYMENT_R1="registry.k8s.io/nginx:test-cmd"
export IMAGE_DEPLOYMENT_R2="$IMAGE_NGINX"
export IMAGE_PERL="registry.k8s.io/perl"
export IMAGE_PAUSE_V2="registry.k8s.io/pause:2.0"
export IMAGE_DAEMONSET_R2="registry.k8s.io/pause:latest"
export IMAGE_DAEMONSET_R2_2="registry.k8s.io/nginx:test-cmd"
export IMAGE_STATEFULSET_R1="registry.k8s.io/nginx-slim:0.7"
export IMAGE_STATEFULSET_R2="registry.k8s.io/nginx-slim:0.8"

clusterroles="clusterroles"
configmaps="configmaps"
csr="csr"
cronjob="cronjobs"
deployments="deployments"
namespaces="namespaces"
nodes="nodes"
persistentvolumeclaims="persistentvolumeclaims"
persistentvolumes="persistentvolumes"
pods="pods"
podtemplates="podtemplates"
replicasets="replicasets"
replicationcontrollers="replicationcontrollers"
roles="roles"
secrets="secrets"
selfsubjectreviews="selfsubjectreviews"
serviceaccounts="serviceaccounts"
services="services"
statefulsets="statefulsets"
storageclass="storageclass"
subjectaccessreviews="subjectaccessreviews"
customresourcedefinitions="customresourcedefinitions"
daemonsets="daemonsets"
controllerrevisions="controllerrevisions"
job="jobs"

export id_field=".metadata.name"
export labels_field=".metadata.labels"
export annotations_field=".metadata.annotations"
export service_selector_field=".spec.selector"
export rc_replicas_field=".spec.replicas"
export rc_status_replicas_field=".status.replicas"
export rc_container_image_field=".spec.template.spec.containers"
export rs_replicas_field=".spec.replicas"
export port_field="(index .spec.ports 0).port"
export port_name="(index .spec.ports 0).name"
export second_port_field="(index .spec.ports 1).port"
export second_port_name="(index .spec.ports 1).name"
export image_field="(index .spec.containers 0).image"
export pod_container_name_field="(index .spec.containers 0).name"
export container_name_field="(index .spec.template.spec.containers 0).name"
export hpa_min_field=".spec.minReplicas"
export hpa_max_field=".spec.maxReplicas"
export hpa_cpu_field="(index .spec.metrics 0).resource.target.averageUtilization"
export template_labels=".spec.template.metadata.labels.name"
export statefulset_replicas_field=".spec.replicas"
export statefulset_observed_generation=".status.observedGeneration"
export job_parallelism_field=".spec.parallelism"
export deployment_replicas=".spec.replicas"
export secret_data=".data"
export secret_type=".type"
export change_cause_annotation='.*kubernetes.io/change-cause.*'
export pdb_min_available=".spec.minAvailable"
export pdb_max_unavailable=".spec.maxUnavailable"
export generation_field=".metadata.generation"
export container_len="(len .spec.template.spec.containers)"
export image_field0="(index .spec.template.spec.containers 0).image"
export image_field1="(index .spec.template.spec.containers 1).image"

# As legacy-script.sh's environment: the directory of the kubectl binary
# (kubeconfig.sh runs it by path; older and newer names) and a PEM certificate at
# $TMPDIR/apiserver.crt (upstream's serving certificate; here the tenant's).
KUBE_OUTPUT_HOSTBIN="$(dirname "$(command -v kubectl)")"
THIS_PLATFORM_BIN="$KUBE_OUTPUT_HOSTBIN"
if [ ! -f "${TMPDIR:-/tmp}/apiserver.crt" ]; then
  for crt in "${TMPDIR:-/tmp}"/data/pki/*.crt; do
    [ -f "$crt" ] && cp "$crt" "${TMPDIR:-/tmp}/apiserver.crt" && break
  done
fi

# The proxy helpers legacy-script.sh gives proxy.sh, redone: `kubectl proxy`
# on a free loopback port (static files from the working directory, optional
# API prefix), and a check of the HTTP code a path answers through it.
PROXY_PID=""
PROXY_PORT=""
start-proxy() {
  local log="$KUBE_TEMP/proxy.log" i
  : >"$log"
  if [ $# -eq 0 ]; then
    kubectl proxy --port=0 --address=127.0.0.1 --www=. >"$log" 2>&1 &
  else
    kubectl proxy --port=0 --address=127.0.0.1 --www=. --api-prefix="$1" >"$log" 2>&1 &
  fi
  PROXY_PID=$!
  for i in $(seq 1 100); do
    PROXY_PORT="$(sed -n 's/.*Starting to serve on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log" | head -1)"
    [ -n "$PROXY_PORT" ] && return 0
    sleep 0.1
  done
  echo "!!! kubectl proxy did not start: $(cat "$log")" >&2
  return 1
}
stop-proxy() {
  if [ -n "$PROXY_PID" ]; then
    kill "$PROXY_PID" 2>/dev/null || true
    wait "$PROXY_PID" 2>/dev/null || true # 143: killed, as asked
  fi
  PROXY_PID=""
  PROXY_PORT=""
  return 0
}
trap stop-proxy EXIT # a failing function must not leave its proxy behind
check-curl-proxy-code() {
  local code
  code="$(curl --noproxy '*' -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:${PROXY_PORT}$1")"
  if [ "$code" = "$2" ]; then
    echo "Successful: GET $1 answered $code"
    return 0
  fi
  echo "FAIL: GET $1 through kubectl proxy answered $code, expected $2" >&2
  return 1
}

for f in test/cmd/*.sh; do source "$f"; done
