#!/usr/bin/env bash
# Issue 37's evidence in one call on a machine with one NVIDIA GPU, within BUDGET seconds: environment
# throughput beside gymnax and pgx (benchmarks.run, one process per environment), PQN's time to MinAtar's
# published return with 10 seeds (benchmarks.gpu train), and DQN's paper protocol beside MinAtar's PyTorch
# examples/dqn.py (benchmarks.gpu dqn). Each stage has its own time cap and runs even if an earlier one
# failed; after each, everything so far is packed into $OUT/results.tar.gz (unpack it into
# benchmarks/results/gpu_<card>/ and run `python -m benchmarks.gpu report`).
#
#   OUT=/tmp/out bash benchmarks/gpu_suite.sh 585
#   OUT=/tmp/out SMOKE=1 bash benchmarks/gpu_suite.sh 400   # the same stages, tiny, to try the script on a CPU
#
# Needs: the peers as wheels in .whl/ (gymnasium, farama-notifications, gymnax, pgx, svgwrite, minatar,
# flashbax: `pip download --no-deps` them for the machine's Python) and MinAtar's examples/dqn.py as
# .gpu/minatar_dqn.py (both git-ignored; the machine has no network).
set -u
BUDGET=${1:-585}
START=$(date +%s)
W=/tmp/gpu_results
rm -rf "$W"
mkdir -p "$W" "$OUT"
export PYTHONUNBUFFERED=1 MAXATAR_CACHE_DIR=off XLA_PYTHON_CLIENT_MEM_FRACTION=0.6

SIZES=(1024 16384 131072) SEEDS=10 CAP=35 DQN_FRAMES=25000 REF_FRAMES=10000 REPEATS=3
if [[ ${SMOKE:-} ]]; then
    SIZES=(64) SEEDS=2 CAP=12 DQN_FRAMES=10000 REF_FRAMES=500 REPEATS=1
fi

left() { echo $((BUDGET - ($(date +%s) - START))); }
pack() { tar czf "$OUT/results.tar.gz" -C "$W" . 2>/dev/null; }
stage() { # stage NAME CAP_SECONDS COMMAND...: run COMMAND under a cap (cut to what the budget has left)
    local name=$1 cap=$2 l t0 rc
    shift 2
    l=$(left)
    ((cap > l - 5)) && cap=$((l - 5))
    if ((cap < 15)); then
        echo "skipped $name: $l s left" | tee -a "$W/stages.log"
        return
    fi
    t0=$(date +%s)
    timeout --signal=INT --kill-after=5 "$cap" "$@" >"$W/log_$name.txt" 2>&1
    rc=$?
    echo "$name: rc=$rc, $(($(date +%s) - t0)) s (cap $cap s), $(left) s left" | tee -a "$W/stages.log"
    grep -E '^  [A-Za-z]+-v[01] N=|^\{|Error|error' "$W/log_$name.txt" | cut -c1-400 | tail -n 8
    pack
}

python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl ||
    exit 1
export PYTHONPATH=/tmp/site:$PWD
{
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    python3 -c "import jax, flax, optax, gymnax, pgx, torch; print('jax', jax.__version__, jax.devices(), 'flax', \
flax.__version__, 'optax', optax.__version__, 'torch', torch.__version__, torch.cuda.is_available())"
    nproc
    free -g | head -2
} >"$W/machine.txt" 2>&1
cat "$W/machine.txt"
echo "$@" >"$W/commands.txt"

# 1. Environment throughput beside the peers (MaxAtar's per-env key mode, peers as they ship).
# The Python-loop and numpy references are left out: this is about the GPU.
TP=(--sizes "${SIZES[@]}" --repeats $REPEATS --min-time 0.2 --no-gym --loop-max-n 0
    --skip "maxatar[step+reset]" "maxatar[split]" "gymnasium[sync]" "gymnasium[vector]")
for env in Breakout-v0 Asterix-v0 Freeway-v0 SpaceInvaders-v0 CartPole-v1; do
    echo "python -m benchmarks.run --envs $env ${TP[*]} --out throughput_$env" >>"$W/commands.txt"
    stage "throughput_$env" 50 python3 -m benchmarks.run --envs "$env" "${TP[@]}" --out "$W/throughput_$env"
done
# Seaquest's peers compile slowly: one process per N, so that a cap loses one size, not all.
for n in "${SIZES[@]}"; do
    echo "python -m benchmarks.run --envs Seaquest-v0 ${TP[*]} --sizes $n --out throughput_Seaquest-v0_$n" >>"$W/commands.txt"
    stage "throughput_Seaquest-v0_$n" 40 python3 -m benchmarks.run --envs Seaquest-v0 "${TP[@]}" --sizes "$n" \
        --out "$W/throughput_Seaquest-v0_$n"
done

# 2. PQN, 10 seeds in one program, to the published DQN return (then on towards 5M frames, within the cap).
for game in Breakout Asterix Freeway SpaceInvaders Seaquest; do
    echo "python -m benchmarks.gpu train --algo pqn --games $game --seeds $SEEDS --cap $CAP --out ." >>"$W/commands.txt"
    stage "pqn_$game" $((CAP + 20)) python3 -m benchmarks.gpu train --algo pqn --games "$game" --seeds $SEEDS --cap $CAP --out "$W"
done

# 3. DQN, the paper's protocol, 10 seeds in one program, beside MinAtar's examples/dqn.py on the same card.
echo "python -m benchmarks.gpu dqn --seeds $SEEDS --frames $DQN_FRAMES --reference .gpu/minatar_dqn.py --reference-frames $REF_FRAMES --out ." >>"$W/commands.txt"
stage dqn 70 python3 -m benchmarks.gpu dqn --seeds $SEEDS --frames $DQN_FRAMES --reference .gpu/minatar_dqn.py --reference-frames $REF_FRAMES --out "$W"

# 4. With what is left: PPO's time to the target on the games it reaches quickly.
for game in Breakout SpaceInvaders; do
    echo "python -m benchmarks.gpu train --algo ppo --games $game --seeds $SEEDS --cap $CAP --out ." >>"$W/commands.txt"
    stage "ppo_$game" $((CAP + 20)) python3 -m benchmarks.gpu train --algo ppo --games "$game" --seeds $SEEDS --cap $CAP --out "$W"
done
cat "$W/stages.log"
for f in "$W"/train.jsonl "$W"/dqn.jsonl; do [[ -f $f ]] && cat "$f"; done
pack
