#!/bin/sh
# Install shardshift with its test and oracle extras into the current Python environment.
# Order matters: the CPU build of torch first (on these machines `torch==2.13.0` is a local CPU
# wheel; an unpinned torch would pull a CUDA build of several GB), then DeepSpeed as pure Python
# (DS_BUILD_OPS=0) built against that torch (--no-build-isolation), then the project itself.
set -eu
# Under CI (.ci/run) Python writes bytecode as the tests import modules, so pip need not compile the
# ~13,000 files of the oracles up front (about 40 s, most of them never imported)
nocompile=""
if [ "${CI:-}" = "true" ]; then nocompile="--no-compile"; fi
python -m pip install --quiet $nocompile "setuptools>=64" wheel
python -m pip install --quiet $nocompile "torch==2.13.0"
DS_BUILD_OPS=0 python -m pip install --quiet $nocompile --no-build-isolation "deepspeed==0.19.8"
python -m pip install --quiet $nocompile -e ".[test,oracles,lsp,docs]"
# torchtitan 0.2.2 (the last release that reads TOML train configs) as an oracle for the torchtitan
# format: only its config code is used, so without its dependencies (torchdata would pull torch)
python -m pip install --quiet $nocompile --no-deps "torchtitan==0.2.2" "tyro==1.0.17" "docstring-parser==0.18.0" "typeguard==4.6.1"
# axolotl 0.21.0 as the oracle for Axolotl YAML: only its config schema is used, so without its
# dependencies (it declares Python >= 3.12; the schema runs on 3.11), plus what the schema imports
python -m pip install --quiet $nocompile --no-deps --ignore-requires-python "axolotl==0.21.0"
python -m pip install --quiet $nocompile --no-deps "peft==0.21.2" "addict==2.4.0"
# torchao, the version axolotl 0.21.0 pins: its QAT configurations, which the coverage loader's `stage=qat`
# builds on the CPU (torch is its only import there)
python -m pip install --quiet $nocompile --no-deps "torchao==0.18.0"
python -m pip install --quiet $nocompile "pillow==13.0.0"
