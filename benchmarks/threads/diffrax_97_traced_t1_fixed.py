# Thread: https://github.com/patrick-kidger/diffrax/issues/97
# Trap: a jitted argument passed as diffeqsolve's t1 is fine; @patrick-kidger (diffrax maintainer): "`t1` can indeed be traced just fine!" Nothing should be reported.
import jax
import jax.numpy as jnp
from diffrax import Dopri5, ODETerm, PIDController, SaveAt, diffeqsolve


def decay(t, y, args):
    return -y


term = ODETerm(decay)
solver = Dopri5()
controller = PIDController(rtol=1e-5, atol=1e-5)


@jax.jit
def solve_to(t1, y0):
    sol = diffeqsolve(term, solver, t0=0, t1=t1, dt0=0.1, y0=y0,
                      saveat=SaveAt(t1=True), stepsize_controller=controller)
    return sol.ys


solve_to(2.0, jnp.array([1.0, 0.5]))
