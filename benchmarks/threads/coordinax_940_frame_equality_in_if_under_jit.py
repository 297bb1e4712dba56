# Thread: https://github.com/GalacticDynamics/coordinax/issues/940
# Diagnosis (@nstarman, coordinax maintainer, issue description): "`==` — not traceable. ... Frames are `eqx.Module` pytrees, so `__eq__` over array leaves returns a 0-d `jax.Array`, not a `bool`. Eagerly the implicit `bool()` succeeds, which is why this looks fine; under `jit` it raises." (TracerBoolConversionError at `if from_frame == to_frame:`)
# Problem: the Galactocentric self-transition fast path tests `from_frame == to_frame` in an `if`; with the frames passed as `jit` arguments (the pattern the project recommends) their array fields are traced and the comparison has no truth value.
# Written for this corpus after packages/coordinaxs.astro/src/coordinaxs/astro/_src/frame_transforms.py (same structure, reduced; the jitted repro is the issue's, without units).
import equinox as eqx
import jax
import jax.numpy as jnp
import plum


class Galactocentric(eqx.Module):
    roll: jax.Array = eqx.field(default_factory=lambda: jnp.asarray(0.0))
    z_sun: jax.Array = eqx.field(default_factory=lambda: jnp.asarray(20.8))


class Identity(eqx.Module):
    def __call__(self, q):
        return q


class Rotate(eqx.Module):
    angle: jax.Array

    def __call__(self, q):
        c, s = jnp.cos(self.angle), jnp.sin(self.angle)
        return jnp.array([c * q[0] - s * q[1], s * q[0] + c * q[1], q[2]])


@plum.dispatch
def frame_transition(from_frame: Galactocentric, to_frame: Galactocentric, /):
    if from_frame == to_frame:  # expect: JF402
        return Identity()
    return Rotate(to_frame.roll - from_frame.roll)


jax.jit(lambda a, b: frame_transition(a, b)(jnp.array([1.0, 2, 3])))(
    Galactocentric(), Galactocentric(roll=jnp.asarray(0.17)))
