#!/usr/bin/env bash
# GPU measurements on a lent device machine (one NVIDIA H200, Python 3.12, CUDA 13, no network there):
# `python -m evaluation bench --gpu-only` = compression latency with every layer offloaded (n_gpu_layers=-1) on the
# 14 mini-swe-agent trajectories of ../shared, and the server backend against llama-cpp-python's own server started
# with --n_gpu_layers -1. llama-cpp-python is built there with CUDA from a carried, trimmed sdist.
#
# Why five calls: at most 64 MiB travel per call, and the model alone is 253 MB. The machine keeps /tmp between calls
# while it stays warm (30 s after each call), so each call carries one part of the model; the first also carries
# the wheels, the sdist and the trajectories, and starts the CUDA build in the background (setsid: it outlives the
# call), which runs while the other parts travel. The last call waits for the build, joins the parts, checks the
# sha256 and runs the bench. Make the calls back to back: a gap over 30 s gives the machine back and loses /tmp.
#
# 1. Here, on the connected machine, in the repository root (the model in models/, ../shared/trajectories present):
#        scripts/device_gpu.sh prepare            # writes .dev1 ... .dev5 (git-ignored through .git/info/exclude)
# 2. Then, through the device tool, in this order:
#        run(command="bash scripts/device_gpu.sh step 1", carry=[".dev1"], timeout_s=120)
#        run(command="bash scripts/device_gpu.sh step 2", carry=[".dev2"], timeout_s=90)
#        run(command="bash scripts/device_gpu.sh step 3", carry=[".dev3"], timeout_s=90)
#        run(command="bash scripts/device_gpu.sh step 4", carry=[".dev4"], timeout_s=90)
#        run(command="bash scripts/device_gpu.sh step 5 && bash scripts/device_gpu.sh bench", carry=[".dev5"],
#            timeout_s=540)
#    then give_back. Results come back under $OUT: bench/results.json, bench/results.md, bench/llama_server.log,
#    bench.log, build.log (its tail), nvidia-smi.txt.
#    If the bench call ends at its limit while the machine is still warm: `bash scripts/device_gpu.sh bench` again
#    (no carry) picks up where the build and the parts are.
set -euo pipefail

LLAMA_CPP_PYTHON=0.3.36
MODEL=models/gemma-3-270m-q4_k_m.gguf
PARTS=5
FIRST_PART_MIB=30   # .dev1 also holds ~25 MB of wheels, sdist and trajectories
PART_MIB=56         # + the repository (~2 MB) stays under 64 MiB per call
WORK=${DEVICE_WORK:-/tmp/oc}
SITE=${DEVICE_SITE:-/tmp/site}
# Built for Hopper only (sm_90), without the flash-attention kernels (the compressor runs with flash_attn off; they
# are most of the build time), NCCL (one GPU) and the multimodal library (unused).
CUDA_CMAKE_ARGS="-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_CUDA_FA=OFF -DGGML_CUDA_NCCL=OFF -DLLAVA_BUILD=OFF"
# cp312 wheels of what the device image lacks (it has numpy, numba, tokenizers, jinja2, tqdm, pillow, attrs,
# cloudpickle, anyio, click, h11, pyyaml, requests, annotated-doc, scikit-build-core, cmake, ninja).
WHEELS=(
  pydantic==2.14.4 pydantic_core==2.50.5 annotated_types==0.8.0 typing_inspection==0.4.5 typing_extensions==4.16.0
  gguf==0.19.0 outlines==1.3.3 outlines_core==0.2.14 llguidance==1.9.1 jsonschema==4.26.0 referencing==0.37.0
  rpds-py==2026.9.1 jsonschema-specifications==2025.9.1 diskcache==5.6.3 genson==1.4.0
  fastapi==0.165.0 starlette==1.10.0 uvicorn==0.54.0 sse-starlette==3.7.0 starlette-context==0.3.6
  pydantic-settings==2.16.3 python-dotenv==1.2.4 opentelemetry-api==1.45.2 detect-secrets==1.5.0
)

prepare() {
  local trajectories=${1:-../shared/trajectories} python=${PYTHON:-.venv/bin/python}
  [ -f "$MODEL" ] || { echo "device_gpu.sh: $MODEL missing (scripts/download_model.sh)" >&2; exit 2; }
  [ -d "$trajectories" ] || { echo "device_gpu.sh: $trajectories missing" >&2; exit 2; }
  local exclude k tmp
  exclude=$(git rev-parse --git-path info/exclude)
  for k in $(seq 1 $PARTS); do
    rm -rf ".dev$k" && mkdir -p ".dev$k"
    grep -qxF "/.dev$k/" "$exclude" 2>/dev/null || echo "/.dev$k/" >> "$exclude"
  done
  "$python" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 \
    --platform manylinux_2_31_x86_64 -d .dev1/whl "${WHEELS[@]}"
  # The sdist is 77 MB; without llama.cpp's git pack, test vocabularies, docs and benchmark data it is ~12 MB (a
  # cmake configure of the trimmed tree passed here).
  tmp=$(mktemp -d)
  "$python" -m pip download -q --no-deps --no-binary=:all: -d "$tmp" "llama-cpp-python==$LLAMA_CPP_PYTHON"
  tar xzf "$tmp/llama_cpp_python-$LLAMA_CPP_PYTHON.tar.gz" -C "$tmp"
  local src="$tmp/llama_cpp_python-$LLAMA_CPP_PYTHON" v="vendor/llama.cpp"
  (cd "$src" && rm -rf .git .gitmodules "$v/.git" "$v"/models/*.gguf "$v/docs" "$v/benches" "$v/media" "$v/.github" \
     examples/notebooks "$v"/tools/server/public* "$v/tools/server/webui")
  tar czf ".dev1/llama_cpp_python-$LLAMA_CPP_PYTHON-trimmed.tar.gz" -C "$tmp" "llama_cpp_python-$LLAMA_CPP_PYTHON"
  rm -rf "$tmp"
  mkdir -p .dev1/trajs
  find "$trajectories" -path '*mini-swe-agent*' -name '*.traj.json' -exec cp {} .dev1/trajs/ \;
  sha256sum "$MODEL" | cut -d' ' -f1 > .dev1/model.sha256
  dd if="$MODEL" of=.dev1/model.part bs=1M count=$FIRST_PART_MIB status=none
  for k in $(seq 2 $PARTS); do
    dd if="$MODEL" of=".dev$k/model.part" bs=1M skip=$((FIRST_PART_MIB + (k - 2) * PART_MIB)) count=$PART_MIB status=none
  done
  local joined
  joined=$(for k in $(seq 1 $PARTS); do cat ".dev$k/model.part"; done | sha256sum | cut -d' ' -f1)
  [ "$joined" = "$(cat .dev1/model.sha256)" ] || { echo "device_gpu.sh: the parts do not join to the model" >&2; exit 1; }
  echo "trajectories: $(ls .dev1/trajs | wc -l)"
  du -sh .dev* | sed 's/^/carry: /'
}

build() {  # in the background on the device (started by step 1)
  cd "$WORK/llama_cpp_python-$LLAMA_CPP_PYTHON"
  local start=$SECONDS
  if CMAKE_ARGS="$CUDA_CMAKE_ARGS" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
       python3 -m pip wheel -v --no-deps --no-build-isolation --no-index -w "$WORK/wheels" . \
     && python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$SITE" \
       "$WORK"/wheels/llama_cpp_python-*.whl; then
    echo "build: done in $((SECONDS - start)) s"
    touch "$WORK/build.ok"
  else
    echo "build: FAILED after $((SECONDS - start)) s"
    touch "$WORK/build.failed"
  fi
}

step() {
  local k=$1
  mkdir -p "$WORK"
  cp ".dev$k/model.part" "$WORK/model.part$k"
  if [ "$k" = 1 ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .dev1/whl/*.whl
    rm -rf "$WORK/trajs" && cp -r .dev1/trajs "$WORK/trajs" && cp .dev1/model.sha256 "$WORK/"
    tar xzf ".dev1/llama_cpp_python-$LLAMA_CPP_PYTHON-trimmed.tar.gz" -C "$WORK"
    cp "$0" "$WORK/device_gpu.sh"
    setsid nohup bash "$WORK/device_gpu.sh" build > "$WORK/build.log" 2>&1 < /dev/null &
    nvidia-smi -L || true
  fi
  echo "step $k: $(ls "$WORK"/model.part* | wc -l) of $PARTS model parts on the device; build log: $(tail -c 300 "$WORK/build.log" | tail -1)"
}

bench() {
  local out=${OUT:-$WORK/out} waited=0
  mkdir -p "$out"
  while [ ! -e "$WORK/build.ok" ] && [ ! -e "$WORK/build.failed" ]; do
    sleep 5; waited=$((waited + 5))
    [ $((waited % 60)) = 0 ] && echo "bench: waiting for the CUDA build (${waited} s): $(tail -1 "$WORK/build.log" | cut -c1-160)"
  done
  tail -c 20000 "$WORK/build.log" > "$out/build.log"
  [ -e "$WORK/build.ok" ] || { echo "bench: the CUDA build failed (build.log)" >&2; exit 1; }
  if [ ! -f "$MODEL" ] || [ "$(sha256sum "$MODEL" | cut -d' ' -f1)" != "$(cat "$WORK/model.sha256")" ]; then
    cat $(for k in $(seq 1 $PARTS); do echo "$WORK/model.part$k"; done) > "$MODEL"
    [ "$(sha256sum "$MODEL" | cut -d' ' -f1)" = "$(cat "$WORK/model.sha256")" ] \
      || { echo "bench: the model's sha256 does not match (a part missing?)" >&2; exit 1; }
  fi
  nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || true
  export PYTHONPATH="$SITE:$PWD" PYTHONUNBUFFERED=1
  python3 -c "import llama_cpp; print('llama-cpp-python', llama_cpp.__version__, 'GPU offload:', llama_cpp.llama_supports_gpu_offload())" \
    | tee "$out/bench.log"
  set -o pipefail
  python3 -m offline_compress.cli bench --gpu-only --repeats 2 --server-files 2 --out "$out/bench" "$WORK/trajs" 2>&1 \
    | tee -a "$out/bench.log"
}

case "${1:-}" in
  prepare) shift; prepare "$@" ;;
  step) step "$2" ;;
  build) build ;;
  bench) bench ;;
  *) echo "usage: $0 prepare [TRAJECTORY_DIR] | step N | bench" >&2; exit 2 ;;
esac
