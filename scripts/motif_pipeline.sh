#!/usr/bin/env bash
# Build Motif reward models, one per goal: collect a pair dataset once, then for each goal
# annotate it with a language model and train a reward model on the labels.
#
#   scripts/motif_pipeline.sh [options] [-- LM options for `motif annotate`]
#
#   --pairs N          pairs to collect (default 100000; ~0.9 GB in memory while collecting,
#                      the published dataset had ~500000)
#   --policy RUN_DIR   collect with a trained run's checkpoint (default: random actions)
#   --checkpoint C     with --policy: latest | best | a .pth file (default latest)
#   --task T           task to collect in (default: the policy's, else nethack:score)
#   --goals LIST       comma-separated goals (default defaultgoal,combat,gold,stairs)
#   --version V        prompt version (default default)
#   --data DIR         dataset folder (default datasets/motif/pairs; not under ./data, which
#                      is where the suite looks for third-party data)
#   --models DIR       reward models go to DIR/<goal>-<version> (default models/motif)
#   --seed S           collection seed (default 0)
#   --epochs E --lr X --batch-size B   reward-model training (default: the published 10, 1e-5, 1024)
#
# Everything after `--` goes to `llmexplore motif annotate`, e.g.
#   -- --backend openai --base-url http://localhost:8000/v1 --model meta-llama/Llama-3.1-70B-Instruct
# Without it the embedded oracle labels the pairs. Rerunning resumes every step: an existing
# dataset is kept, annotation asks only for unlabelled pairs, finished reward models are kept.
# Run it from the repository root so that configs/motif.yaml finds models/motif/.
# PYTHON picks the interpreter (default: python, with llmexplore importable).
set -euo pipefail

PYTHON=${PYTHON:-python}
pairs=100000 policy="" checkpoint="latest" task="" goals="defaultgoal,combat,gold,stairs" version="default"
data="datasets/motif/pairs" models="models/motif" seed=0
train_args=()
lm_args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --pairs) pairs=$2; shift 2 ;;
        --policy) policy=$2; shift 2 ;;
        --checkpoint) checkpoint=$2; shift 2 ;;
        --task) task=$2; shift 2 ;;
        --goals) goals=$2; shift 2 ;;
        --version) version=$2; shift 2 ;;
        --data) data=$2; shift 2 ;;
        --models) models=$2; shift 2 ;;
        --seed) seed=$2; shift 2 ;;
        --epochs|--lr|--batch-size) train_args+=("$1" "$2"); shift 2 ;;
        --) shift; lm_args=("$@"); break ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "motif_pipeline.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

llmexplore() { "$PYTHON" -m llmexplore "$@"; }
last_field() {  # the named field of the JSON line a command printed last
    "$PYTHON" -c 'import json, sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])[sys.argv[1]])' "$1"
}

if [ -d "$data/data" ]; then
    echo "== dataset $data exists: not collecting again"
else
    echo "== collecting $pairs pairs into $data"
    collect=(motif collect --pairs "$pairs" --out "$data" --seed "$seed")
    [ -n "$task" ] && collect+=(--task "$task")
    [ -n "$policy" ] && collect+=(--policy "$policy" --checkpoint "$checkpoint")
    llmexplore "${collect[@]}"
fi

IFS=',' read -r -a goal_list <<< "$goals"
for goal in "${goal_list[@]}"; do
    echo "== annotating $data for goal $goal (prompt version $version)"
    report=$(llmexplore motif annotate --dataset "$data" --goal "$goal" --version "$version" --quiet \
        ${lm_args[@]+"${lm_args[@]}"})
    echo "$report"
    annotation=$(echo "$report" | last_field annotation)
    out="$models/$goal-$version"
    if [ -f "$out/manifest.json" ]; then
        echo "== reward model $out exists: kept"
        continue
    fi
    echo "== training reward model $out on $annotation"
    llmexplore motif train-reward --dataset "$data" --annotation "$annotation" --out "$out" \
        ${train_args[@]+"${train_args[@]}"}
done
echo "== reward models: $(for g in "${goal_list[@]}"; do printf '%s ' "$models/$g-$version"; done)"
