#!/bin/sh
# Helm post-renderer for OpenKruise's chart beside kruise-webhook (deploy/README.md, "Beside OpenKruise"): reads
# the manifests Helm rendered on stdin and writes them to stdout with msidecarset.kb.io, vsidecarset.kb.io,
# vpodunavailablebudget.kb.io and vworkloadspread.kb.io deleted from kruise-manager's webhook configurations
# (kustomization.yaml next to this script), everything else as rendered.
#
#   helm upgrade kruise openkruise/kruise ... -f deploy/openkruise-side/values.yaml \
#     --post-renderer deploy/openkruise-side/post-renderer.sh
#
# Needs kubectl (its built-in kustomize, >= 1.21); KUBECTL names another binary.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/kustomization.yaml" "$here/mutating.yaml" "$here/validating.yaml" "$work/"
cat > "$work/helm-output.yaml"
"${KUBECTL:-kubectl}" kustomize "$work"
