# Thread: https://github.com/google-deepmind/dm-haiku/issues/63
# Trap: a Haiku module prints plain strings in __init__ and __call__, and the transformed `apply` runs un-jitted in a Python loop, so the prints run on every call as the user saw; @cgarciae: "this is expected unless you use `jit` somewhere", @tomhennigan (haiku maintainer): "As @cgarciae says this is WAI." Nothing is jitted and nothing printed is traced.
import haiku as hk


class Counter(hk.Module):
    def __init__(self):
        super().__init__(name="counter")
        print("Counter.__init__ ran")

    def __call__(self, x):
        print("Counter.__call__ ran")
        return x + 1


def forward(x):
    return Counter()(x)


rng = hk.PRNGSequence(0)
fwd = hk.transform(forward)
params = fwd.init(next(rng), 1)
x = 0
for _ in range(5):
    x = fwd.apply(params, None, x)
