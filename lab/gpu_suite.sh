#!/usr/bin/env bash
# What only a GPU can show, in one call on a machine with one NVIDIA GPU, within BUDGET seconds: environment
# throughput beside gymnax and pgx (benchmarks.run, one process per environment and N), where the step time goes
# (benchmarks.profile_envs: phases, kernels, HLO), PQN's time to MinAtar's published return with 10 seeds (lab.gpu
# train), DQN's paper protocol beside MinAtar's PyTorch examples/dqn.py (lab.gpu dqn), the continual protocol at
# scale, the offline datasets' collection rate, the version digests on the card, and the agents' sweeps. Each stage
# has its own time cap and runs even if an earlier one failed; after each, everything so far is packed into
# $OUT/results.tar.gz (unpack it into benchmarks/results/gpu_<card>/ and run `python -m lab.gpu report`).
#
#   bash lab/gpu_wheels.sh                            # once, on the CPU machine: the peers' wheels into .whl/
#   OUT=/tmp/out bash lab/gpu_suite.sh 585            # throughput, pqn, dqn, ppo, profile, million
#   OUT=/tmp/out STAGES="pqn dqn" bash lab/gpu_suite.sh 300    # only these stages, in this order
#   OUT=/tmp/out STAGES="profile freeway doors continual+digests+datasets million" bash lab/gpu_suite.sh 585
#       # issue 61's items 1-3 in one call: a `+` runs those stages side by side (the training run leaves the card
#       # room), the others one after another
#   OUT=/tmp/out SMOKE=1 bash lab/gpu_suite.sh 400   # the same stages, tiny, to try the script on a CPU
#   OUT=/tmp/out PARALLEL=1 STAGES="seeds10 gymnax seeds5" bash lab/gpu_suite.sh 540   # all side by side
#   OUT=/tmp/out STAGES="sac sac_critic" CRITIC_GAMES=Seaquest bash lab/gpu_suite.sh 560
#   OUT=/tmp/out STAGES=sac_pessimism CRITIC_GAMES="Asterix Seaquest" PESSIMISM=0.5,0.6,0.7,0.75 \
#       bash lab/gpu_suite.sh 560
#   OUT=/tmp/out STAGES="sac_blend+ppo_grid" bash lab/gpu_suite.sh 540   # issue 53's SAC and PPO rows
#   OUT=/tmp/out STAGES=ppo_grid PPO_GRID="--gamma 0.99,0.995 --gae-lambda 0.8,0.95" bash lab/gpu_suite.sh 560
#
# Stages: throughput, freeway, doors, million (N = 2^20), profile, pqn, ppo, dqn, continual, datasets, digests,
# sac, seeds5, seeds10, gymnax, sac_critic, sac_pessimism, sac_blend, ppo_grid (see run_stage below); GAMES: the
# games of the training stages (CRITIC_GAMES: sac_critic's and sac_pessimism's, GAMES if unset; PESSIMISM: their
# values, comma-separated). PARALLEL=1 runs all the named stages side by side; each keeps its own cap.
#
# Needs: the peers as wheels in .whl/ (gymnasium, farama-notifications, gymnax, pgx, svgwrite, minatar, flashbax,
# minari, for the machine's Python: `bash lab/gpu_wheels.sh`, carried as `.whl`; matplotlib and its dependencies in
# .whl/plot/, installed only where matplotlib is missing, for the agents' learning curves) and, for the dqn stage,
# MinAtar's examples/dqn.py as .gpu/minatar_dqn.py (both git-ignored; the machine has no network).
set -u
BUDGET=${1:-585}
START=$(date +%s)
W=/tmp/gpu_results
rm -rf "$W"
mkdir -p "$W" "$OUT"
export PYTHONUNBUFFERED=1 MAXATAR_CACHE_DIR=off XLA_PYTHON_CLIENT_MEM_FRACTION=0.6

SIZES=(1024 16384 131072) SEEDS=10 CAP=35 DQN_FRAMES=25000 REF_FRAMES=10000 REPEATS=3 SMOKE_N=0 FRAMES=()
NAP_FRAMES=100000000 NAP_POINTS=100 DATASET_STEPS=1000000
if [[ ${SMOKE:-} ]]; then
    SIZES=(64) SEEDS=2 CAP=12 DQN_FRAMES=10000 REF_FRAMES=500 REPEATS=1 SMOKE_N=128 FRAMES=(--total-steps 20000)
    NAP_FRAMES=100000 NAP_POINTS=10 DATASET_STEPS=5000
fi

left() { echo $((BUDGET - ($(date +%s) - START))); }
# The agents' checkpoints stay behind (and the half-written ones of a stage cut at its cap: replay buffers, GBs):
# their metrics.csv, summary.json and logs are the results.
# Packed to a file of its own, then renamed: stages running side by side each pack, and one file stays whole.
pack() {
    tar czf "$OUT/.results.$BASHPID.tar.gz" --exclude='*.npz' --exclude='*.tmp' -C "$W" . 2>/dev/null
    mv -f "$OUT/.results.$BASHPID.tar.gz" "$OUT/results.tar.gz"
}
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
if ! python3 -c "import matplotlib" 2>/dev/null && compgen -G ".whl/plot/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/plot/*.whl
fi
{
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    python3 -c "import jax, flax, optax, gymnax, pgx, torch; print('jax', jax.__version__, jax.devices(), 'flax', \
flax.__version__, 'optax', optax.__version__, 'torch', torch.__version__, torch.cuda.is_available())"
    nproc
    free -g | head -2
} >"$W/machine.txt" 2>&1
cat "$W/machine.txt"
python3 -m lab.gpu device --out "$W"  # the card beside every figure (lab.gpu report's heading)
echo "# OUT=\$OUT PARALLEL=${PARALLEL:-} STAGES=\"${STAGES:-}\" GAMES=\"${GAMES:-}\"" \
    "CRITIC_GAMES=\"${CRITIC_GAMES:-}\" PESSIMISM=\"${PESSIMISM:-}\"" \
    "bash lab/gpu_suite.sh $BUDGET" >"$W/commands.txt"

# The Python-loop and numpy references are left out of the throughput runs: this is about the GPU.
TP=(--repeats $REPEATS --min-time 0.2 --no-gym --loop-max-n 0
    --skip "maxatar[step+reset]" "maxatar[split]" "gymnasium[sync]" "gymnasium[vector]")
read -r -a ALGO_GAMES <<<"${GAMES:-Breakout Asterix Freeway SpaceInvaders Seaquest}"

throughput() { # ENV CAP SIZES...: one benchmarks.run process per N, so that a cap loses one size, not all
    local env=$1 cap=$2 n
    shift 2
    for n in "$@"; do
        echo "python -m benchmarks.run --envs $env --sizes $n ${TP[*]} --out throughput_${env}_$n" >>"$W/commands.txt"
        stage "throughput_${env}_$n" "$cap" python3 -m benchmarks.run --envs "$env" --sizes "$n" "${TP[@]}" \
            --out "$W/throughput_${env}_$n"
    done
}

train() { # ALGO GAME...: 10 seeds in one program, to the published DQN return, then on towards 5M frames
    local algo=$1 game
    shift
    for game in "$@"; do
        echo "python -m lab.gpu train --algo $algo --games $game --seeds $SEEDS --cap $CAP --out ." \
            >>"$W/commands.txt"
        stage "${algo}_$game" $((CAP + 20)) python3 -m lab.gpu train --algo "$algo" --games "$game" \
            --seeds "$SEEDS" --cap "$CAP" --out "$W"
    done
}

sac_games() { # NAME DIR SAC_ARGS...: SAC `fast` on each of CRITIC_GAMES (GAMES if unset), 10 seeds from 100 in
    # one program per game, the games side by side, each a stage of its own (NAME_<game>) writing to DIR/<game>-v0
    local name=$1 dir=$2 game pids=() games
    shift 2
    read -r -a games <<<"${CRITIC_GAMES:-${ALGO_GAMES[*]}}"
    for game in "${games[@]}"; do
        echo "python -m maxatar_agents.sac --env maxatar/$game-v0 --preset fast $* --seeds $SEEDS --seed 100" \
            "--no-progress --out $dir/$game-v0" >>"$W/commands.txt"
        stage "${name}_$game" 540 python3 -m maxatar_agents.sac --env "maxatar/$game-v0" --preset fast "$@" \
            --seeds "$SEEDS" --seed 100 --no-progress --out "$W/$dir/$game-v0" "${FRAMES[@]}" &
        pids+=($!)
    done
    wait "${pids[@]}"
}

grid_rows() { # NAME ALGO PRESET SEEDS CHOOSER_SEEDS CHOOSER_GAMES ARGS...: ALGO's PRESET with ARGS' comma lists swept
    # in one program per game (all games side by side, each a stage NAME_<game>): seeds 0..SEEDS-1 (the protocol's, the
    # rows) on every game, and CHOOSER_SEEDS more after them on CHOOSER_GAMES, which choose the values
    local name=$1 algo=$2 preset=$3 seeds=$4 more=$5 choosers=" $6 " game n pids=()
    shift 6
    for game in "${ALGO_GAMES[@]}"; do
        n=$seeds
        [[ $choosers == *" $game "* ]] && n=$((seeds + more))
        echo "python -m maxatar_agents.$algo --env maxatar/$game-v0 --preset $preset $* --seed 0 --seeds $n" \
            "--no-progress --out $name/$game-v0" >>"$W/commands.txt"
        stage "${name}_$game" 540 env XLA_PYTHON_CLIENT_PREALLOCATE=false python3 -m "maxatar_agents.$algo" --env "maxatar/$game-v0" --preset "$preset" "$@" \
            --seed 0 --seeds "$n" --no-progress --out "$W/$name/$game-v0" "${FRAMES[@]}" &
        pids+=($!)
    done
    wait "${pids[@]}"
}

run_stage() {
    case $1 in
    throughput) # every game and CartPole beside gymnax and pgx (gymnax's Freeway compiles for ~17 s at 16,384)
        for env in Breakout-v0 Asterix-v0 SpaceInvaders-v0 CartPole-v1 Seaquest-v0; do
            throughput "$env" 40 "${SIZES[@]}"
        done
        throughput Freeway-v0 75 "${SIZES[@]}"
        throughput Doors-v0 40 "${SIZES[@]}"
        ;;
    freeway) throughput Freeway-v0 75 "${SIZES[-1]}" ;;  # the largest N, the row gymnax's slow compile left out
    doors) throughput Doors-v0 40 "${SIZES[@]}" ;;  # no peer has Doors: MaxAtar beside the harness ceiling
    million) # N = 2^20 where memory allows
        for env in CartPole-v1 Breakout-v0 Asterix-v0 Freeway-v0 SpaceInvaders-v0 Seaquest-v0 Doors-v0; do
            throughput "$env" 60 $((SMOKE_N ? SMOKE_N : 1048576))
        done
        ;;
    pqn) train pqn "${ALGO_GAMES[@]}" ;;
    ppo) train ppo "${ALGO_GAMES[@]}" ;;
    dqn) # the paper's protocol, 10 seeds in one program, beside MinAtar's examples/dqn.py on the same card
        echo "python -m lab.gpu dqn --seeds $SEEDS --frames $DQN_FRAMES --reference .gpu/minatar_dqn.py" \
            "--reference-frames $REF_FRAMES --out ." >>"$W/commands.txt"
        stage dqn 70 python3 -m lab.gpu dqn --seeds "$SEEDS" --frames "$DQN_FRAMES" \
            --reference .gpu/minatar_dqn.py --reference-frames "$REF_FRAMES" --out "$W"
        ;;
    sac | seeds5 | seeds10 | gymnax) # issue 38 through the resumable results pipeline, from a copy of the committed
        # results so that only the protocol's missing parts train (sac: SAC's 5 seeds; seeds5: DQN `fast`'s and SAC's 5;
        # seeds10: PQN's and PPO's 10; gymnax: the like-for-like runs), each part a process of its own (--jobs), each
        # allocating GPU memory as it needs it
        local setting=minatar algos=(pqn ppo) games=("${ALGO_GAMES[@]/%/-v0}")
        [[ $1 == sac ]] && algos=(sac)
        [[ $1 == seeds5 ]] && algos=(dqn sac)
        [[ $1 == gymnax ]] && setting=gymnax
        local jobs=$((${#games[@]} * ${#algos[@]}))  # every part at once ...
        [[ $1 == seeds10 ]] && jobs=${#games[@]}     # ... but PQN's before PPO's: a cut loses only the last wave
        [[ $1 == sac ]] && jobs=$((2 * ${#games[@]}))  # ... and both of SAC's parts (seeds 0-2, 3-4) of a game
        echo "python -m lab.results run --setting $setting --algos ${algos[*]} --games ${games[*]}" \
            "--jobs $jobs --resume --no-export --no-progress --results agents_$setting" >>"$W/commands.txt"
        stage "$1" 540 env XLA_PYTHON_CLIENT_PREALLOCATE=false python3 -m lab.results run \
            --setting "$setting" --algos "${algos[@]}" --games "${games[@]}" --jobs "$jobs" --resume \
            --no-export --no-progress --results "$W/agents_$setting" --runs "$W/runs_$setting"
        ;;
    sac_critic) # SAC `fast` with either target critic value (clipped double Q "min", double average "mean"):
        # benchmarks/results/agents/sac-critic-target/
        local target
        for target in min mean; do
            sac_games "sac_critic_$target" "sac_critic/$target" --critic-target "$target" &
        done
        wait
        ;;
    sac_pessimism) # SAC `fast` with the blended target critic, its pessimism swept from the mean (0) to the
        # smaller (1) in one program per game: PESSIMISM's values (default 5) x 10 seeds
        sac_games sac_pessimism sac_pessimism --critic-target blend \
            --critic-pessimism "${PESSIMISM:-0,0.25,0.5,0.75,1}"
        ;;
    sac_blend) # SAC `fast`, blended target critic, PESSIMISM's values: seeds 0-4 on every game, 5-12 on Asterix and
        # Seaquest, which choose the value (the two games flip between pessimism 0.5 and 0.75); a checkpoint (replay
        # buffers: about 100 MB a run) at 1M frames only. Beside ppo_grid on an H100 the 15-run programs reached 1M
        # frames in 6 min and the 39-run ones saved nothing: run it alone, with fewer values
        grid_rows sac_blend sac fast 5 8 "Asterix Seaquest" --critic-target blend \
            --critic-pessimism "${PESSIMISM:-0.6,0.65,0.7}" --checkpoint-every 1000000
        ;;
    ppo_grid) # PPO `minatar` at the protocol's 5M frames, PPO_GRID's swept fields: seeds 0-9 on every game, 10-19
        # on Seaquest, which chooses the values
        # shellcheck disable=SC2086  # PPO_GRID is a list of options
        grid_rows ppo_grid ppo minatar 10 10 Seaquest --total-steps 5000000 \
            ${PPO_GRID:---lr 2.5e-3,5e-3 --ent-coef 0.01,0.03}
        ;;
    profile) # where the step time goes in the rows that missed their targets (benchmarks/profile_envs.py): phases,
        # gymnax's step beside, the costliest kernels and kernels per step of both, their optimized HLO
        # (Seaquest: 13 compilations, and gymnax's rollout takes about 3 s a call at 131,072)
        local env cap
        for env in CartPole-v1:90 Seaquest-v0:150; do
            cap=${env#*:} env=${env%:*}
            echo "python -m benchmarks.profile_envs --envs $env --n ${SIZES[-1]} --repeats 3 --hlo hlo" \
                "--trace /tmp/trace --out profile_$env.md" >>"$W/commands.txt"
            stage "profile_$env" "$cap" python3 -m benchmarks.profile_envs --envs "$env" --n "${SIZES[-1]}" \
                --repeats "$REPEATS" --min-time 0.2 --hlo "$W/hlo" --trace /tmp/trace --out "$W/profile_$env.md"
        done
        ;;
    continual) # the NaP protocol (5 games x 10M frames x 2 cycles = 100M frames) for 3 seeds: PQN's continual
        # preset, one program for the whole sequence (docs/guides/continual.md); lab.gpu report reads its summary
        echo "python -m maxatar_agents.pqn --preset c-chain --protocol nap --frames $NAP_FRAMES" \
            "--log-points $NAP_POINTS --seeds 3 --no-progress --out continual_nap" >>"$W/commands.txt"
        stage continual 300 python3 -m maxatar_agents.pqn --preset c-chain --protocol nap --frames "$NAP_FRAMES" \
            --log-points "$NAP_POINTS" --seeds 3 --no-progress --out "$W/continual_nap"
        ;;
    datasets) # the offline datasets' collection and writing rate (benchmarks/datasets.py): 1M transitions
        echo "python -m benchmarks.datasets --steps $DATASET_STEPS --out datasets.md" >>"$W/commands.txt"
        stage datasets 150 python3 -m benchmarks.datasets --steps "$DATASET_STEPS" --out "$W/datasets.md"
        ;;
    digests) # every id's version digest (tests/test_versions.py) computed on the card: equal to the CPU's
        echo "python -m pytest -p no:cacheprovider tests/test_versions.py" >>"$W/commands.txt"
        stage digests 150 bash -c 'python3 -c "import jax; print(\"backend:\", jax.default_backend(), jax.devices())" &&
            python3 -m pytest -q -p no:cacheprovider -o addopts= tests/test_versions.py'
        ;;
    *) echo "unknown stage $1" | tee -a "$W/stages.log" ;;
    esac
}

# The committed agent results, copied before any stage starts (stages side by side share them): the results
# pipeline's stages train only the parts missing there.
for setting in minatar gymnax; do
    mkdir -p "$W/agents_$setting"
    cp -r "benchmarks/results/agents/$setting/." "$W/agents_$setting/"
done
# the agents' stages (all but throughput, pqn, dqn, ppo, profile, million) run only when named; a name joined to
# others by `+` runs beside them, the names one after another (all side by side with PARALLEL=1)
together() { # NAME+NAME...: the stages side by side, each process taking GPU memory as it needs it (a process
    # alone takes XLA_PYTHON_CLIENT_MEM_FRACTION of it at once: two side by side would not fit)
    local name pids=() grow=
    [[ $1 == *+* || ${PARALLEL:-} ]] && grow=1
    for name in ${1//+/ }; do
        if [[ $grow ]]; then
            XLA_PYTHON_CLIENT_PREALLOCATE=false run_stage "$name" &
        else
            run_stage "$name" &
        fi
        pids+=($!)
    done
    wait "${pids[@]}"
}
for names in ${STAGES:-throughput pqn dqn ppo profile million}; do
    if [[ ${PARALLEL:-} ]]; then
        together "$names" &
    else
        together "$names"
    fi
done
wait
cat "$W/stages.log"
for f in "$W"/train.jsonl "$W"/dqn.jsonl; do [[ -f $f ]] && cat "$f"; done
pack
