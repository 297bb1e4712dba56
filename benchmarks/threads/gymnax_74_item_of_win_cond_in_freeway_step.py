# Thread: https://github.com/RobertTLange/gymnax/pull/74 (commit 0096e0e "fix: non-jittable code")
# Diagnosis (@EdanToledo, gymnax contributor; merged by the maintainer @RobertTLange): "fix: non-jittable code" (`win_cond.item()` replaced by `win_cond`)
# Problem: the MinAtar Freeway agent step returns `win_cond.item()`, a Python value of a traced comparison, so the jitted step fails.
# (The environment reduced to the agent step; state as a flax struct dataclass as in gymnax.)
import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class EnvState:
    pos: jnp.ndarray
    move_timer: jnp.ndarray


@struct.dataclass
class EnvParams:
    player_speed: int = 3


def step_agent(action, state, params):
    cond_up = jnp.logical_and(action == 2, state.move_timer == 0)
    cond_down = jnp.logical_and(action == 4, state.move_timer == 0)
    any_cond = jnp.logical_or(cond_up, cond_down)
    state_up = jnp.maximum(0, state.pos - 1)
    state_down = jnp.minimum(9, state.pos + 1)
    pos = (1 - any_cond) * state.pos + cond_up * state_up + cond_down * state_down
    move_timer = jax.lax.select(any_cond, params.player_speed, state.move_timer)
    win_cond = pos == 0
    reward = win_cond * 1.0
    pos = jax.lax.select(win_cond, 9, pos)
    return state.replace(pos=pos, move_timer=move_timer), reward, win_cond.item()  # expect: JF402


@jax.jit
def step_env(key, state, action, params):
    state, reward, win_cond = step_agent(action, state, params)
    return state, reward, win_cond


state, reward, win = step_env(jax.random.PRNGKey(0), EnvState(jnp.array(9), jnp.array(0)), 2, EnvParams())
