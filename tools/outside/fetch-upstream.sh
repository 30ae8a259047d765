#!/usr/bin/env bash
# Fetches the upstream kubernetes files tools/outside/kubectl-cmd.sh runs (the
# ones tools/outside/kubectl-cmd/README.md lists) into the git-ignored
# tools/outside/kubectl-cmd/upstream/, for a developer with network access who
# has not got the team's tarball. Run once:
#
#   tools/outside/fetch-upstream.sh            # GITHUB_TOKEN optional (rate limit)
#
# Every file below is pinned by its git blob id (git hash-object of the copy the
# counts in docs/api.md were measured with) and fetched by that id from
# GitHub's git-blobs API, so the result is byte for byte that copy; each file
# is checked against its id after download. Four files of that copy are not
# upstream blobs (see README: three fixtures adapted from removed API versions,
# apps.sh cut to its first two functions); they are fetched whole at REF
# (default v1.32.3, kubectl's version here) from raw.githubusercontent.com and
# reported, since the adaptations are not redone here.
#
# Written without network access: it has not been run. Nothing else is changed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dest="${DEST:-$here/kubectl-cmd/upstream}"
repo="kubernetes/kubernetes"
ref="${REF:-v1.32.3}"
auth=()
[ -n "${GITHUB_TOKEN:-}" ] && auth=(-H "Authorization: Bearer $GITHUB_TOKEN")

# git blob id, path (relative to the kubernetes repository root).
pinned=(
  1d28761311220c8f8e947880e3bd93e1594de1b2 hack/lib/test.sh
  21fa5bfd10a9cb9c59d1d5a13eea246f97c815dc hack/testdata/CRD/example-crd-1-cluster-scoped-resource.yaml
  3774d84878f21963fb359b6ebb73596d634435c0 hack/testdata/CRD/example-crd-1-cluster-scoped.yaml
  ba1f268b61ad783a3f0134ea7cd013a143cf85b5 hack/testdata/CRD/example-crd-1-namespaced-resource.yaml
  42128ff915150247edc7fa635cf1c4d6a30e90c0 hack/testdata/CRD/example-crd-1-namespaced.yaml
  af2400de32858afc01217416b0afb1459fde5cb2 hack/testdata/CRD/example-crd-with-additionalfields.yaml
  44a1a189c8923345700ebc506106ba58f0aac543 hack/testdata/filter/pod-apply-selector.yaml
  ae70053904562c82b249b5ebaf4f6e83a37230a2 hack/testdata/filter/pod-dont-apply.yaml
  60b752b181d62c10f038b56f88887ca2412fb67d hack/testdata/invalid-deployment-unknown-and-duplicate-fields.yaml
  92b504ef77a1bd84017ab2434750980c0ae78a44 hack/testdata/pod.yaml
  92006c89a77ef9cbe25a6a3127c6a8448f2b20b0 test/cmd/auth_whoami.sh
  e57de8086a8cde0da891365e661cfa1a5018f506 test/cmd/authorization.sh
  c7e51887431d411a36b123179c6004a6e17776e9 test/cmd/batch.sh
  d09958f939ece04c5a70d792b25b3744ebaf6408 test/cmd/certificate.sh
  e2e878a69a3e18d70915c70f72680c17f22a7c7f test/cmd/create.sh
  0d47302be0bf41cc52052029037484515cfff40b test/cmd/delete.sh
  cddb9942e0c5e4f6934121ffd32accf8ebb1d7d5 test/cmd/discovery.sh
  cdf43566e2a5332007f4f9e2e707ea5a9e48884a test/cmd/events.sh
  e6ff9a91c3b83160271583d5d70c5892e47b2bbc test/cmd/kubeconfig.sh
  7c9b158b3b8baecc487eed7d34c6c0bf367cd027 test/cmd/node-management.sh
  98e30fbfcfa78cfc2a373c61b89413352e88fbbc test/cmd/proxy.sh
  7d4d758f9923eefaa6e592acc2c8faea58bad771 test/cmd/rbac.sh
  cb65aa7e0f4bc9fdea9cc5449d9be8f1e09bd954 test/cmd/request-timeout.sh
  ce387e2e611e8a0715a1abd83fb9914ab0708d28 test/cmd/storage.sh
  f684dfc56ea4112e495e3e64540771dd2e2bfd55 test/cmd/version.sh
  e6b5a7044b1cb26a5d0afc4f6810f3273a33a942 test/cmd/wait.sh
  96c45f966af9aa6dc39700f3b36a7d0f942f8f64 test/fixtures/doc-yaml/admin/limitrange/valid-pod.yaml
  7bf0e87dcc972bac129a43d3e34bdd6b1c4f9ab3 test/fixtures/doc-yaml/user-guide/persistent-volumes/claims/claim-01.yaml
  383fe5bc264906d581c98b3144a8878bc197ecf4 test/fixtures/doc-yaml/user-guide/persistent-volumes/claims/claim-03.json
  87cb7fa3dc2d81e89eed3f9483140191e5f9435a test/fixtures/doc-yaml/user-guide/persistent-volumes/volumes/gce.yaml
  25acecca93d0643c020d8c6cdae93e0588ff642b test/fixtures/doc-yaml/user-guide/persistent-volumes/volumes/local-01.yaml
  e72d2e7d174df0e2ca9201aaf5a76a40693cdb64 test/fixtures/doc-yaml/user-guide/persistent-volumes/volumes/local-02.yaml
)
# Adapted in the measured copy (README explains how): taken whole at $ref.
adapted=(
  hack/testdata/csr.yml
  hack/testdata/rollingupdate-daemonset.yaml
  hack/testdata/rollingupdate-daemonset-rv2.yaml
  test/cmd/apps.sh
)

failed=0
for ((i = 0; i < ${#pinned[@]}; i += 2)); do
  blob="${pinned[i]}" path="${pinned[i + 1]}"
  mkdir -p "$dest/$(dirname "$path")"
  if ! curl -fsSL "${auth[@]}" -H "Accept: application/vnd.github.raw+json" \
    "https://api.github.com/repos/$repo/git/blobs/$blob" -o "$dest/$path.part"; then
    echo "FAILED $path: blob $blob not fetched" >&2
    failed=$((failed + 1)); rm -f "$dest/$path.part"; continue
  fi
  got="$(git hash-object "$dest/$path.part")"
  if [ "$got" != "$blob" ]; then
    echo "FAILED $path: got blob $got, want $blob" >&2
    failed=$((failed + 1)); rm -f "$dest/$path.part"; continue
  fi
  mv "$dest/$path.part" "$dest/$path"
  echo "ok      $path"
done
for path in "${adapted[@]}"; do
  mkdir -p "$dest/$(dirname "$path")"
  if curl -fsSL "https://raw.githubusercontent.com/$repo/$ref/$path" -o "$dest/$path"; then
    echo "at $ref $path (the measured copy was adapted: see README)"
  else
    echo "FAILED $path: not found at $ref" >&2
    failed=$((failed + 1))
  fi
done
echo "fetch-upstream: $((${#pinned[@]} / 2 + ${#adapted[@]} - failed)) files in $dest, $failed failed"
[ "$failed" -eq 0 ]
