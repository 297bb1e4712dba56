# Thread: https://github.com/jax-ml/jax/issues/9024
# Diagnosis (@jakevdp, JAX maintainer, opening the issue): "it will be treated as static based on the hash of the wrapper class, meaning that changes to underlying data do not lead to recompilation"
# Problem: a custom pytree passed as a static argument is mutated in place (`m.data += 1`); the jitted function keeps returning the data it saw when it was traced.
import jax.numpy as jnp
from jax import jit
from jax.tree_util import register_pytree_node


class MyClass:
    def __init__(self, data):
        self.data = data


register_pytree_node(MyClass,
                     lambda v: ((v.data,), None),
                     lambda _, data: MyClass(*data))

m = MyClass(jnp.arange(4))

get_data = lambda x: x.data  # expect: JF404
jit_get_data = jit(get_data, static_argnums=0)

print(get_data(m))
print(jit_get_data(m))

m.data += 1
print(get_data(m))      # [1 2 3 4]
print(jit_get_data(m))  # still [0 1 2 3]: no cache miss
