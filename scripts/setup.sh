#!/usr/bin/env bash
# Create .venv at the repository root and install rag_assets with its pinned stack.
# Idempotent: a second run only checks what is there.
set -euo pipefail
cd "$(dirname "$0")/.."

# One line per stage; what a stage prints (pip, torch's exporter) is kept aside and shown only
# when the stage fails, with its exit status.
output=$(mktemp)
trap 'rm -f "$output"' EXIT
stage() {
  local what=$1 status=0
  shift
  echo "rag_assets: $what"
  "$@" >"$output" 2>&1 || status=$?
  if [ "$status" -ne 0 ]; then
    cat "$output" >&2
    echo "rag_assets: failed ($what), exit status $status" >&2
    exit "$status"
  fi
}

PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null || PYTHON=python3
[ -x .venv/bin/python ] || stage "creating .venv" "$PYTHON" -m venv .venv
PIP=(.venv/bin/python -m pip --disable-pip-version-check)

# The CPU build of torch first: otherwise docling's dependencies pull a CUDA build of several GB.
# The install is redone only when the pinned requirements change.
stamp=.venv/.rag_assets-installed
wanted=$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
  .venv/bin/python -c "import torch" 2>/dev/null \
    || stage "installing torch (CPU build)" "${PIP[@]}" install -q torch==2.13.0
  stage "installing rag_assets and its pinned stack" \
    "${PIP[@]}" install -q -c constraints.txt -e ".[dev]"
fi
# torchvision (wanted only by Docling's TableFormer) is a CUDA build that breaks
# `import FlagEmbedding` next to CPU torch; nothing here needs it.
if .venv/bin/python -m pip show -q torchvision >/dev/null 2>&1; then
  stage "removing torchvision" "${PIP[@]}" uninstall -q -y torchvision
fi
# SCARF_NO_ANALYTICS: importing unstructured otherwise reports usage over the network.
stage "checking the imports" env SCARF_NO_ANALYTICS=true .venv/bin/python -c \
  "import FlagEmbedding, pymupdf.layout, pymilvus, docling, dagster, unstructured"
echo "$wanted" > "$stamp"
# The bundled model's ONNX export (the default embedding runtime's fp32 graph; int8 is made
# when first asked for), once per machine and model folder into $RAG_ASSETS_MODEL_CACHE; the
# first ingest would otherwise make it.
stage "exporting the embedding model to ONNX" .venv/bin/python -m rag_assets.embedding.prepare

# Debian's headless Chromium for the UI screenshots test
# (rag_assets_tests/e2e/test_ui_screenshots.py) and PostgreSQL's server for the deployment test
# (rag_assets_tests/e2e/test_postgres_deployment.py, which starts a throwaway cluster of its own);
# skipped at once when present. CI runs as root; elsewhere apt-get goes through sudo.
packages=()
command -v chromium >/dev/null || packages+=(chromium)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || packages+=(postgresql)
if [ ${#packages[@]} -gt 0 ] && command -v apt-get >/dev/null; then
  SUDO=(); [ "$(id -u)" -eq 0 ] || SUDO=(sudo)
  echo "rag_assets: installing ${packages[*]} (Debian)"
  { "${SUDO[@]}" apt-get update -qq \
    && "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}"; } \
    >"$output" 2>&1 \
    || { cat "$output" >&2; echo "rag_assets: ${packages[*]} not installed; their tests will skip (fail in CI)" >&2; }
fi
echo "rag_assets: environment ready in .venv"
