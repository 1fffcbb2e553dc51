"""The Why Ajax page's average-reward example, as written: APO and ASAC keep a reward rate per seed."""

from ajax import APO, ASAC

# On-policy: PPO's clipped update on the reward minus the reward per step.
apo = APO("Pendulum-v1", n_envs=4, n_steps=256)
state, _ = apo.train(seed=[0, 1], n_timesteps=4_096)
print(state.average_reward)  # one estimate per seed

# Off-policy: soft actor-critic on the same criterion.
asac = ASAC("Pendulum-v1", learning_starts=1_000)
state, _ = asac.train(seed=[0, 1], n_timesteps=2_000)
print(state.theta)  # its reward-rate estimate, entropy term included
