"""Kernel counting from optimized HLO text: GPU-shaped modules (as text) and a real CPU one."""
from __future__ import annotations

import pytest

from jaxfuse_lint.verify.hlo import (
    constant_bytes,
    count_kernels,
    kernel_kind,
    parse_hlo_module,
    shape_bytes,
    short_shape,
)

# A GPU-style module: a cuBLAS gemm, a Triton fusion, an async copy, a command
# buffer (a `call`) inside a while body with a known trip count, a conditional,
# an async-wrapped fusion, and fusion/reduction sub-computations that must not
# be entered.
GPU_MODULE = r"""
HloModule jit_step, is_scheduled=true

%region_add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %add.9 = f32[] add(%a, %b)
}

%fused_multiply (param_0: c64[64,64,33], param_1: c64[64,64,33]) -> c64[64,64,33] {
  %param_0 = c64[64,64,33]{2,1,0} parameter(0)
  %param_1 = c64[64,64,33]{2,1,0} parameter(1)
  %zero = f32[] constant(0)
  %table = f32[16]{0} constant({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
  ROOT %multiply.1 = c64[64,64,33]{2,1,0} multiply(%param_0, %param_1)
}

%fused_kmesh () -> c64[64,64,33] {
  %iota.1 = s32[64,64,33]{2,1,0} iota(), iota_dimension=0
  ROOT %convert.1 = c64[64,64,33]{2,1,0} convert(%iota.1)
}

%fused_add (p: s32[]) -> s32[] {
  %p = s32[] parameter(0)
  %one = s32[] constant(1)
  ROOT %add.2 = s32[] add(%p, %one)
}

%fused_compare (q: s32[]) -> pred[] {
  %q = s32[] parameter(0)
  %five = s32[] constant(5)
  ROOT %lt = pred[] compare(%q, %five), direction=LT
}

%fused_reduce (r: f32[128,128]) -> f32[128] {
  %r = f32[128,128]{1,0} parameter(0)
  %z = f32[] constant(0)
  ROOT %reduce.1 = f32[128]{0} reduce(%r, %z), dimensions={1}, to_apply=%region_add
}

%triton_gemm_computation (t0: f32[128,128], t1: f32[128,128]) -> f32[128,128] {
  %t0 = f32[128,128]{1,0} parameter(0)
  %t1 = f32[128,128]{1,0} parameter(1)
  ROOT %dot.1 = f32[128,128]{1,0} dot(%t0, %t1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

%command_buffer (cb0: f32[64,64,64], cb1: c64[64,64,33]) -> f32[64,64,64] {
  %cb0 = f32[64,64,64]{2,1,0} parameter(0)
  %cb1 = c64[64,64,33]{2,1,0} parameter(1)
  %fft.1 = c64[64,64,33]{2,1,0} fft(%cb0), fft_type=RFFT, fft_length={64,64,64}
  %loop_multiply_fusion = c64[64,64,33]{2,1,0} fusion(%fft.1, %cb1), kind=kLoop, calls=%fused_multiply
  ROOT %fft.2 = f32[64,64,64]{2,1,0} fft(%loop_multiply_fusion), fft_type=IRFFT, fft_length={64,64,64}
}

%body (arg_tuple: (s32[], f32[64,64,64], c64[64,64,33])) -> (s32[], f32[64,64,64], c64[64,64,33]) {
  %arg_tuple = (s32[], f32[64,64,64]{2,1,0}, /*index=2*/c64[64,64,33]{2,1,0}) parameter(0)
  %gte.0 = s32[] get-tuple-element(%arg_tuple), index=0
  %gte.1 = f32[64,64,64]{2,1,0} get-tuple-element(%arg_tuple), index=1
  %gte.2 = c64[64,64,33]{2,1,0} get-tuple-element(%arg_tuple), index=2
  %call.1 = f32[64,64,64]{2,1,0} call(%gte.1, %gte.2), to_apply=%command_buffer
  %add_fusion = s32[] fusion(%gte.0), kind=kLoop, calls=%fused_add
  ROOT %tuple.1 = (s32[], f32[64,64,64]{2,1,0}, c64[64,64,33]{2,1,0}) tuple(%add_fusion, %call.1, %gte.2)
}

%cond (cond_tuple: (s32[], f32[64,64,64], c64[64,64,33])) -> pred[] {
  %cond_tuple = (s32[], f32[64,64,64]{2,1,0}, c64[64,64,33]{2,1,0}) parameter(0)
  %gte.c = s32[] get-tuple-element(%cond_tuple), index=0
  ROOT %compare_fusion = pred[] fusion(%gte.c), kind=kLoop, calls=%fused_compare
}

%branch_small (b0: f32[128,128]) -> f32[128] {
  %b0 = f32[128,128]{1,0} parameter(0)
  ROOT %reduce_fusion.a = f32[128]{0} fusion(%b0), kind=kInput, calls=%fused_reduce
}

%branch_big (b1: f32[128,128]) -> f32[128] {
  %b1 = f32[128,128]{1,0} parameter(0)
  %copy.b = f32[128,128]{1,0} copy(%b1)
  ROOT %reduce_fusion.b = f32[128]{0} fusion(%copy.b), kind=kInput, calls=%fused_reduce
}

%async_wrapped (aw: f32[128,128]) -> f32[128] {
  %aw = f32[128,128]{1,0} parameter(0)
  ROOT %reduce_fusion.c = f32[128]{0} fusion(%aw), kind=kInput, calls=%fused_reduce
}

ENTRY %main.9 (x: f32[64,64,64], w: f32[128,128]) -> f32[64,64,64] {
  %x = f32[64,64,64]{2,1,0} parameter(0)
  %w = f32[128,128]{1,0} parameter(1)
  %big = f32[1024]{0} constant({...})
  %scalar = f32[] constant(2)
  %kmesh_fusion = c64[64,64,33]{2,1,0} fusion(), kind=kLoop, calls=%fused_kmesh
  %copy-start = (f32[64,64,64]{2,1,0}, f32[64,64,64]{2,1,0}, u32[]) copy-start(%x)
  %copy-done = f32[64,64,64]{2,1,0} copy-done(%copy-start)
  %gemm = (f32[128,128]{1,0}, s8[4194304]{0}) custom-call(%w, %w), custom_call_target="__cublas$gemm"
  %gte.g = f32[128,128]{1,0} get-tuple-element(%gemm), index=0
  %triton = f32[128,128]{1,0} fusion(%gte.g, %w), kind=kCustom, calls=%triton_gemm_computation, @TRITON@
  %async-start = ((f32[128,128]{1,0}), f32[128]{0}, s32[]) async-start(%triton), calls=%async_wrapped
  %async-done = f32[128]{0} async-done(%async-start)
  %pick = s32[] parameter(2)
  %conditional.1 = f32[128]{0} conditional(%pick, %w, %w), branch_computations={%branch_small, %branch_big}
  %zero.i = s32[] constant(0)
  %tuple.0 = (s32[], f32[64,64,64]{2,1,0}, c64[64,64,33]{2,1,0}) tuple(%zero.i, %copy-done, %kmesh_fusion)
  %while.1 = (s32[], f32[64,64,64]{2,1,0}, c64[64,64,33]{2,1,0}) while(%tuple.0), condition=%cond, body=%body, @LOOP@
  ROOT %result = f32[64,64,64]{2,1,0} get-tuple-element(%while.1), index=1
}
""".replace(
    # Real HLO keeps each instruction on one line; these configs are spliced in to keep this file's lines short.
    "@TRITON@",
    'backend_config={"fusion_backend_config":{"kind":"__triton_gemm","triton_gemm_config":{"block_m":"64"}}}',
).replace("@LOOP@", 'backend_config={"known_trip_count":{"n":"5"},"known_init_step":{"init":"0","step":"1"}}')


def test_kernels_are_counted_by_kind_without_entering_fusions():
    kc = count_kernels(parse_hlo_module(GPU_MODULE))
    assert kc.by_kind == {
        "copy": 2,  # copy-start in ENTRY (its -done is not counted) and copy.b in the big branch
        "custom-call:__cublas$gemm": 1,
        "fft": 2,
        "fusion:kCustom(__triton_gemm)": 1,
        "fusion:kInput": 2,  # one per conditional branch
        "fusion:kInput (async)": 1,
        "fusion:kLoop": 4,  # kmesh, loop multiply (inside the command buffer), add, compare
    }
    assert kc.total == 13


def test_loop_kernels_and_launches_per_run_use_the_known_trip_count():
    kc = count_kernels(parse_hlo_module(GPU_MODULE))
    # body: fft, multiply fusion, fft (in the command-buffer call) + add fusion; condition: compare.
    assert kc.loop_body == 5
    assert kc.loops == [{"while": "while.1", "computation": "main.9", "trip_count": 5, "kernels": 5}]
    # ENTRY: kmesh, copy-start, gemm, triton, async-start = 5; the larger branch = 2;
    # the body 4 kernels x 5 trips; the condition runs 6 times.
    assert kc.launches_per_run == 5 + 2 + 5 * 4 + 6 * 1


def test_unknown_trip_count_leaves_launches_per_run_unknown():
    text = GPU_MODULE.replace('"known_trip_count":{"n":"5"},', "")
    kc = count_kernels(parse_hlo_module(text))
    assert kc.launches_per_run is None
    assert kc.total == 13


def test_constant_bytes_counts_arrays_but_not_scalars():
    module = parse_hlo_module(GPU_MODULE)
    # f32[1024] in ENTRY (4096 B) and the f32[16] table inside a fusion (64 B).
    assert constant_bytes(module) == 4096 + 64


def test_kernel_kind_of_bookkeeping_and_async_done_is_none():
    module = parse_hlo_module(GPU_MODULE)
    entry = module.entry
    assert kernel_kind(entry.by_name["gte.g"], module) is None
    assert kernel_kind(entry.by_name["copy-done"], module) is None
    assert kernel_kind(entry.by_name["async-done"], module) is None
    assert kernel_kind(entry.by_name["while.1"], module) is None
    assert kernel_kind(entry.by_name["copy-start"], module) == "copy"


def test_tuple_shapes_with_index_comments_parse():
    module = parse_hlo_module(GPU_MODULE)
    arg = module.computations["body"].by_name["arg_tuple"]
    assert arg.opcode == "parameter"
    assert arg.parameter_number == 0
    assert shape_bytes(arg.shape) == 4 + 64 * 64 * 64 * 4 + 64 * 64 * 33 * 8


def test_shape_helpers():
    assert shape_bytes("f32[131072,2]{1,0}") == 1048576
    assert shape_bytes("pred[]") == 1
    assert shape_bytes("(s32[], c64[8]{0})") == 4 + 64
    assert short_shape("f32[64,64,33]{2,1,0}") == "f32[64,64,33]"


def test_module_without_entry_is_rejected():
    with pytest.raises(ValueError, match="ENTRY"):
        parse_hlo_module("HloModule m\n")


def test_real_cpu_module_from_jax():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    def f(x):
        return jnp.sin(x) * 2 + jnp.sum(x, axis=1, keepdims=True)

    text = jax.jit(f).lower(jax.ShapeDtypeStruct((64, 3), jnp.float32)).compile().as_text()
    kc = count_kernels(parse_hlo_module(text))
    assert kc.total >= 1
    assert kc.loops == [] and kc.launches_per_run == kc.total
    assert all(k.kind.startswith(("fusion:", "custom-call:")) or k.kind in ("copy", "reduce") for k in kc.kernels)
