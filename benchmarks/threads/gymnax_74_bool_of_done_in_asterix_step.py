# Thread: https://github.com/RobertTLange/gymnax/pull/74 (commit 0096e0e "fix: non-jittable code")
# Diagnosis (@EdanToledo, gymnax contributor; merged by the maintainer @RobertTLange): "fix: non-jittable code" (`bool(done > 0)` replaced by `jnp.bool_(done > 0)`)
# Problem: the MinAtar Asterix entity step returns `bool(done > 0)`; `done` accumulates traced collisions, so the jitted `env.step` fails on the conversion.
# (The environment reduced to the entity loop and the step that calls it; state as a flax struct dataclass as in gymnax.)
import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class EnvState:
    player_x: jnp.ndarray
    player_y: jnp.ndarray
    entities: jnp.ndarray
    move_timer: jnp.ndarray
    move_speed: jnp.ndarray


def step_entities(state):
    entities = state.entities
    done, reward = False, 0
    time_to_move = state.move_timer == 0
    move_timer = jax.lax.select(time_to_move, state.move_speed, state.move_timer)
    for i in range(8):
        x = entities[i]
        slot_filled = x[4] != 0
        lr = x[2]
        x = x.at[0].set(jax.lax.select(slot_filled, x[0] + 1 * lr - 1 * (1 - lr), x[0]))
        coords = jnp.logical_and(x[0] == state.player_x, x[1] == state.player_y)
        collision = jnp.logical_and(coords, slot_filled)
        collision_gold = jnp.logical_and(collision, x[3])
        reward += jax.lax.select(time_to_move, collision_gold, False) * 1
        entities = entities.at[i].set(x * (1 - collision_gold))
        collision_enemy = jnp.logical_and(collision, 1 - x[3])
        done += jax.lax.select(time_to_move, collision_enemy, False)
    return (
        state.replace(entities=entities, move_timer=move_timer),
        reward,
        bool(done > 0),  # expect: JF402
    )


def step_env(key, state, action):
    player_x = jnp.clip(state.player_x + (action == 3) - (action == 1), 0, 9)
    state = state.replace(player_x=player_x)
    state, reward, done = step_entities(state)
    return state, reward, done


state = EnvState(
    player_x=jnp.array(5), player_y=jnp.array(5),
    entities=jnp.zeros((8, 5), dtype=jnp.int32),
    move_timer=jnp.array(0), move_speed=jnp.array(10),
)
step = jax.jit(step_env)
state, reward, done = step(jax.random.PRNGKey(0), state, 3)
