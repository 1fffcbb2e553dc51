# The Why Ajax page's end-to-end example: 8 seeds of 8 CartPole copies, one program.
import jax

from ajax import PPO

print(jax.default_backend())  # "cpu" here; "gpu" when JAX finds one
# 8 seeds, each with 8 copies of CartPole, compiled and run as one program.
agent = PPO("CartPole-v1", n_envs=8, n_steps=128)
state, _ = agent.train(seed=list(range(8)), n_timesteps=16_384)
print(state.collector_state.timestep)  # one count per seed
