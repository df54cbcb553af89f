#!/usr/bin/env bash
# Issue 54 on a 16-core GPU machine: training steps/s on the per-env and the batched sampling path, published
# and small NetHack networks and Crafter, with GPU busy, in one call (about 15 minutes at 60 s a measurement),
# so that a short stay on a GPU machine is spent measuring. Run from the checkout, once installed
# (docs/GPU.md, "Installing on an offline GPU machine"):
#
#   bash tests/perf/gpu_sampling.sh [OUT]                         # on the GPU machine, OUT=gpu-sampling
#   DEVICE=cpu WORKERS=2 SECONDS_EACH=5 bash tests/perf/gpu_sampling.sh /tmp/rehearsal   # rehearsal on a CPU
#   ONLY="small-64 crafter-32" bash tests/perf/gpu_sampling.sh   # some of the measurements
#
# Each bench trains on both paths one after the other and bench.md gives their ratio; OUT/summary.md
# gathers every table. Envs per worker are multiples that batched sampling accepts with the published
# batch of 4,096 (a split's trajectories and an update's must divide one another: 32, 64, 128).
set -euo pipefail
OUT=${1:-gpu-sampling}
SECONDS_EACH=${SECONDS_EACH:-60}
DEVICE=${DEVICE:-gpu}
WORKERS=${WORKERS:-16}
mkdir -p "$OUT"
{
  echo "# issue 54 sampling paths, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "no GPU"
  echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT/summary.md"

bench() {  # name, then bench arguments; ONLY="small-64 crafter-32" runs those alone
  local name=$1
  shift
  if [[ -n "${ONLY:-}" && " $ONLY " != *" $name "* ]]; then return; fi
  echo "== $name" >&2
  python -m llmexplore bench --train-only --seconds "$SECONDS_EACH" -t device="$DEVICE" -t num_workers="$WORKERS" \
    "$@" --out "$OUT/$name" > /dev/null
  { echo; echo "## $name: $*"; cat "$OUT/$name/bench.md"; } >> "$OUT/summary.md"
}

# the two targets first (published and small network), then Crafter, then the larger envs per worker,
# so that a stay cut short keeps the figures that matter most (summary.md grows after each bench)
bench published-64 --preset published -t envs_per_worker=64
bench small-64 --preset published -t network=small -t rnn_size=256 -t envs_per_worker=64
bench crafter-32 --task crafter:reward-free -t envs_per_worker=32 -t batch_size=4096
bench published-128 --preset published -t envs_per_worker=128
bench published-64-compiled --preset published -t envs_per_worker=64 -t compile=learner
cat "$OUT/summary.md"
