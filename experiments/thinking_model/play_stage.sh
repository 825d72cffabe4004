# Sourced by train4.sh (stage Q2), train5.sh (stage S) and lineage.sh (the sixth and seventh attempts): the fourth
# attempt's presets, SFT settings and whole-episode play data (plan4.md), so S trains Q2's levels in Q2's order by
# construction (plan5.md).
ENVS=simple_sokoban,simple_sokoban_hard,larger_sokoban,larger_sokoban_hard,boxoban,boxoban_hard,frozenlake,frozenlake_8x8,frozenlake_det,bandit,bandit_heldout,bandit_reversed
COMMON=(--env "$ENVS" --mode oracle --thought grounded --epochs 1 --batch-size 16 --lr 1e-3 --warmup-steps 20
  --seed 0 --checkpoint-every 500 --log-every 100 --drop-long)
PLAY=(--demo-seed 911 --episodes 32000,8000,12000,6000,2000,2000,32000,12000,6000,2000,3000,3000)
