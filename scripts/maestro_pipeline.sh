#!/usr/bin/env bash
# MaestroMotif end to end: one command from nothing to zero-shot success rates.
#
#   scripts/maestro_pipeline.sh [options] [-- LM options]
#
#   1. collect a pair dataset              (llmexplore motif collect)         OUT/pairs
#   2. per skill: annotate it with the LM  (llmexplore motif annotate --goal SKILL)
#      and train a reward model            (llmexplore motif train-reward)    OUT/rewards/SKILL
#   3. generate and check skill code       (llmexplore maestro generate)      OUT/code
#   4. train the skill-conditioned policy  (llmexplore run --method maestro)  OUT/skills-run
#   5. evaluate it zero-shot per task      (llmexplore maestro evaluate)      OUT/eval/TASK.json
#
# Options (small defaults: the whole pipeline runs in minutes on two CPU cores):
#   --out DIR          everything goes here (default runs/maestro)
#   --pairs N          pairs to collect (default 4000; the published dataset had ~500000)
#   --policy RUN_DIR   collect with a trained run's checkpoint (default: random actions)
#   --skills LIST      comma-separated skills (default discoverer,descender,ascender,worshipper,merchant)
#   --epochs E --lr X --batch-size B   reward-model training (default here: 4, 1e-3, 256;
#                      the published values are 10, 1e-5, 1024)
#   --task T           task the skills train in (default nethack:maestro-score: the zero-shot tasks' 29 actions; c_ext 0)
#   --steps N          training budget in env steps (default 20000; published 4e9)
#   --seed S           seed of collection and training (default 0)
#   --eval LIST        zero-shot tasks to evaluate: all (default: every installed one), none, or a list
#   --episodes N       evaluation episodes per task (default 5)
#   --train-option K=V extra `llmexplore run -t` option (repeatable), e.g. num_workers=2
#
# Everything after `--` goes to the LM steps (annotate, generate, evaluate), e.g.
#   -- --backend openai --base-url http://localhost:8000/v1 --model NAME
# Without it the embedded oracle answers (offline). Rerunning resumes every step: the dataset
# is kept, annotation asks only for missing labels, finished reward models and accepted code are
# kept, training resumes from its last checkpoint, finished evaluations are kept.
# PYTHON picks the interpreter (default: python, with llmexplore importable).
set -euo pipefail

PYTHON=${PYTHON:-python}
out="runs/maestro" pairs=4000 policy="" skills="discoverer,descender,ascender,worshipper,merchant"
epochs=4 lr=1e-3 batch=256 task="nethack:maestro-score" steps=20000 seed=0 eval="all" episodes=5
train_opts=()
lm_args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --out) out=$2; shift 2 ;;
        --pairs) pairs=$2; shift 2 ;;
        --policy) policy=$2; shift 2 ;;
        --skills) skills=$2; shift 2 ;;
        --epochs) epochs=$2; shift 2 ;;
        --lr) lr=$2; shift 2 ;;
        --batch-size) batch=$2; shift 2 ;;
        --task) task=$2; shift 2 ;;
        --steps) steps=$2; shift 2 ;;
        --seed) seed=$2; shift 2 ;;
        --eval) eval=$2; shift 2 ;;
        --episodes) episodes=$2; shift 2 ;;
        --train-option) train_opts+=(-t "$2"); shift 2 ;;
        --) shift; lm_args=("$@"); break ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "maestro_pipeline.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

llmexplore() { "$PYTHON" -m llmexplore "$@"; }
last_field() {  # the named field of the JSON line a command printed last
    "$PYTHON" -c 'import json, sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])[sys.argv[1]])' "$1"
}
mkdir -p "$out"
started=$(date +%s)

data="$out/pairs"
if [ -d "$data/data" ]; then
    echo "== [1/5] dataset $data exists: kept"
else
    echo "== [1/5] collecting $pairs pairs into $data"
    collect=(motif collect --pairs "$pairs" --out "$data" --seed "$seed")
    if [ -n "$policy" ]; then collect+=(--policy "$policy"); else collect+=(--task "$task"); fi
    llmexplore "${collect[@]}"
fi

IFS=',' read -r -a skill_list <<< "$skills"
for skill in "${skill_list[@]}"; do
    model="$out/rewards/$skill"
    if [ -f "$model/manifest.json" ]; then
        echo "== [2/5] reward model $model exists: kept"
        continue
    fi
    echo "== [2/5] annotating $data for skill $skill"
    report=$(llmexplore motif annotate --dataset "$data" --goal "$skill" --quiet ${lm_args[@]+"${lm_args[@]}"})
    annotation=$(echo "$report" | last_field annotation)
    echo "== [2/5] training reward model $model on $annotation"
    llmexplore motif train-reward --dataset "$data" --annotation "$annotation" --out "$model" \
        --epochs "$epochs" --lr "$lr" --batch-size "$batch" > "$out/rewards-$skill.log"
    tail -n 1 "$out/rewards-$skill.log"
done

echo "== [3/5] generating skill code into $out/code"
llmexplore maestro generate --out "$out/code" --skills "$skills" ${lm_args[@]+"${lm_args[@]}"}

run="$out/skills-run"
echo "== [4/5] training the skill-conditioned policy in $task for $steps steps ($run)"
llmexplore run --method maestro --task "$task" --seed "$seed" --steps "$steps" --ext-coef 0 --out "$run" --quiet \
    -o "reward_models=$out/rewards" -o "code=$out/code" -o "skills=[$skills]" ${train_opts[@]+"${train_opts[@]}"}

if [ "$eval" = "all" ]; then
    eval=$("$PYTHON" -c 'from llmexplore.methods.maestro.tasks import zero_shot_tasks; print(",".join(sorted(zero_shot_tasks())))')
    [ -z "$eval" ] && echo "== [5/5] no zero-shot tasks installed: nothing to evaluate" && eval="none"
fi
if [ "$eval" != "none" ]; then
    IFS=',' read -r -a eval_list <<< "$eval"
    for name in "${eval_list[@]}"; do
        result="$out/eval/$name.json"
        if [ -f "$result" ]; then
            echo "== [5/5] $result exists: kept"
        else
            echo "== [5/5] evaluating $name ($episodes episodes)"
            mkdir -p "$out/eval"
            llmexplore maestro evaluate --task "$name" --run "$run" --episodes "$episodes" --out "$result" \
                ${lm_args[@]+"${lm_args[@]}"}
        fi
    done
fi
echo "== done in $(( $(date +%s) - started ))s: reward models $out/rewards, code $out/code, run $run, results $out/eval"
