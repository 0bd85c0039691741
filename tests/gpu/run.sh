#!/usr/bin/env bash
# The GPU test module (tests/gpu) as one script, for a CUDA machine that has
# python3 with torch, transformers and peft but no internet and no evoflow set-up.
#
# Prepare on a machine with the set-up (repository root):
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#     --implementation cp --platform manylinux_2_28_x86_64 -d .whl \
#     duckdb==2.0.0 dill==0.4.1 math-verify==0.9.0 latex2sympy2-extended==1.11.0 \
#     antlr4-python3-runtime==4.13.2 pytest==9.2.0 pluggy iniconfig cloudpickle
#   mkdir -p .gpu-cache/models && cp -r ~/.cache/evoflow/models/tiny-random-llama-v2 \
#     .gpu-cache/models/
# then carry .whl and .gpu-cache to the GPU machine and run: bash tests/gpu/run.sh
# The vLLM test runs where that python3 imports vllm (pip install -e '.[gpu]'),
# and skips, saying so, where it does not.
set -euo pipefail
cd "$(dirname "$0")/../.."
site=${TMPDIR:-/tmp}/evoflow-gpu-site
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --upgrade \
    --target "$site" .whl/*.whl
fi
export PYTHONPATH="$site:$PWD/src:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export EVOFLOW_CACHE="${EVOFLOW_CACHE:-$PWD/.gpu-cache}"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
python3 -c 'import torch, transformers, peft; print("torch", torch.__version__, "cuda", torch.version.cuda, "transformers", transformers.__version__, "peft", peft.__version__)'
python3 -m pytest -p no:cacheprovider -o addopts="" -m gpu tests/gpu -v -s -rA \
  --durations=0 "$@"
