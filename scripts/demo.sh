#!/usr/bin/env bash
#===- demo.sh - From a fresh clone to the PTB perplexity -----------------===#
#
# README command 1: installs dependencies, builds txlc, compiles
# models/ptb_small.toml into build/ptb_small, and evaluates the official
# trained checkpoint (../shared/reference/ptb_small) on PTB valid with memory
# carried across segments.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh build
build/bin/txlc models/ptb_small.toml -o build/ptb_small
build/ptb_small eval --data ../shared/data/ptb --split valid \
  --checkpoint ../shared/reference/ptb_small/model.safetensors
