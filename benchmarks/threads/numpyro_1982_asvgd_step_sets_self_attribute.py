# Thread: https://github.com/pyro-ppl/numpyro/issues/1982
# Diagnosis (@fehiepsi, numpyro maintainer, issue description): "We shouldn't set `self.foo` for a tracer foo" (pointing at `self.loss_temperature = ...` in ASVGD's `step`); "I looked at the code and don't understand how setting `self.loss_temperature = ...` works there."
# Problem: ASVGD's run-loop `step` stores the annealing temperature, computed from the traced step counter, on `self`; under the jitted/looped run the attribute holds a tracer that leaks out of the trace (found with JAX_CHECK_TRACER_LEAKS=1).
# Written for this corpus after numpyro/contrib/einstein/steinvi.py at commit f7746d5 (same structure, reduced; the `fori_loop` shows how SVI runs the step).
import jax


class ASVGD:

    def __init__(self, num_stein_particles=10, num_cycles=10, trans_speed=10):
        self.num_stein_particles = num_stein_particles
        self.num_cycles = num_cycles
        self.trans_speed = trans_speed
        self.loss_temperature = 1.0

    @staticmethod
    def _cyclical_annealing(num_steps, num_cycles, trans_speed):
        norm = float(num_steps + 1) / float(num_cycles)
        cycle_len = num_steps // num_cycles
        last_start = (num_cycles - 1) * cycle_len

        def cycle_fn(t):
            last_cycle = t // last_start
            return (1 - last_cycle) * (
                ((t % cycle_len) + 1) / norm
            ) ** trans_speed + last_cycle

        return cycle_fn

    def setup_run(self, num_steps, istep, iinit):
        cyc_fn = ASVGD._cyclical_annealing(num_steps, self.num_cycles, self.trans_speed)

        def step(info):
            t, iinfo = info[0], info[-1]
            self.loss_temperature = cyc_fn(t) / float(self.num_stein_particles)  # expect: JF403
            return (t + 1, istep(iinfo))

        info_init = (0, iinit)
        return step, info_init

    def run(self, num_steps, istep, iinit):
        step, info_init = self.setup_run(num_steps, istep, iinit)
        return jax.lax.fori_loop(0, num_steps, lambda i, info: step(info), info_init)


ASVGD().run(100, lambda x: x * 0.99, 1.0)
