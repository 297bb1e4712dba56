"""Per-source-line attribution: hand-written GPU HLO text (no GPU needed) and real CPU programs."""
from __future__ import annotations

import json
import os

import pytest

from jaxfuse_lint.verify.attribution import (
    Attribution,
    attribute_hlo,
    line_key,
    parse_buffer_assignment,
)
from jaxfuse_lint.verify.hlo import SourceFrame, parse_hlo_module

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROOFS = os.path.join(ROOT, "fixtures", "proofs")

# A GPU-shaped module as XLA prints it on recent versions: location tables, a
# command buffer (`call`) holding a Triton fusion and a cuBLAS gemm, an async
# copy pair inside a while body with a known trip count, and a transpose XLA
# inserted with no location. Parent frame ids are printed shifted by one
# (frame 1 names itself as parent: no parent).
GPU_MODULE = r"""
HloModule jit_step, is_scheduled=true

FileNames
1 "/src/model.py"
2 "/src/train.py"

FunctionNames
1 "step"
2 "layer"
3 "<module>"

FileLocations
1 {file_name_id=2 function_name_id=3 line=40 end_line=40 column=1 end_column=20}
2 {file_name_id=1 function_name_id=1 line=10 end_line=10 column=5 end_column=30}
3 {file_name_id=1 function_name_id=2 line=3 end_line=3 column=9 end_column=22}
4 {file_name_id=1 function_name_id=1 line=11 end_line=11 column=5 end_column=30}
5 {file_name_id=1 function_name_id=1 line=12 end_line=12 column=5 end_column=30}

StackFrames
1 {file_location_id=1 parent_frame_id=1}
2 {file_location_id=2 parent_frame_id=2}
3 {file_location_id=3 parent_frame_id=3}
4 {file_location_id=4 parent_frame_id=2}
5 {file_location_id=5 parent_frame_id=2}

%fused_scale (p0: f32[128,128]) -> f32[128,128] {
  %p0 = f32[128,128]{1,0} parameter(0)
  %c = f32[] constant(2)
  %b = f32[128,128]{1,0} broadcast(%c), dimensions={}
  ROOT %m = f32[128,128]{1,0} multiply(%p0, %b), metadata={op_name="jit(step)/mul" stack_frame_id=3}
}

%command_buffer (cb0: f32[128,128], cb1: f32[128,128]) -> f32[128,128] {
  %cb0 = f32[128,128]{1,0} parameter(0)
  %cb1 = f32[128,128]{1,0} parameter(1)
  %scale_fusion = f32[128,128]{1,0} fusion(%cb0), kind=kLoop, calls=%fused_scale, metadata={op_name="jit(step)/mul" stack_frame_id=3}
  %gemm = (f32[128,128]{1,0}, s8[4194304]{0}) custom-call(%scale_fusion, %cb1), custom_call_target="__cublas$gemm", metadata={op_name="jit(step)/dot_general" stack_frame_id=4}
  ROOT %gte = f32[128,128]{1,0} get-tuple-element(%gemm), index=0
}

%body (state: (s32[], f32[128,128])) -> (s32[], f32[128,128]) {
  %state = (s32[], f32[128,128]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%state), index=0
  %v = f32[128,128]{1,0} get-tuple-element(%state), index=1
  %cs = (f32[128,128]{1,0}, f32[128,128]{1,0}, u32[]) copy-start(%v), metadata={op_name="jit(step)/while/body/copy" stack_frame_id=5}
  %cd = f32[128,128]{1,0} copy-done(%cs)
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one), metadata={op_name="jit(step)/while/body/add" stack_frame_id=5}
  ROOT %t = (s32[], f32[128,128]{1,0}) tuple(%next, %cd)
}

%cond (cstate: (s32[], f32[128,128])) -> pred[] {
  %cstate = (s32[], f32[128,128]{1,0}) parameter(0)
  %ci = s32[] get-tuple-element(%cstate), index=0
  %three = s32[] constant(3)
  ROOT %lt = pred[] compare(%ci, %three), direction=LT, metadata={op_name="jit(step)/while/cond/lt" stack_frame_id=5}
}

ENTRY %main (x: f32[128,128], w: f32[128,128]) -> f32[128,128] {
  %x = f32[128,128]{1,0} parameter(0), metadata={op_name="x"}
  %w = f32[128,128]{1,0} parameter(1), metadata={op_name="w"}
  %table = f32[64]{0} constant({...})
  %wt = f32[128,128]{0,1} transpose(%w), dimensions={1,0}
  %cmd = f32[128,128]{1,0} call(%x, %wt), to_apply=%command_buffer
  %zero = s32[] constant(0)
  %init = (s32[], f32[128,128]{1,0}) tuple(%zero, %cmd)
  %loop = (s32[], f32[128,128]{1,0}) while(%init), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"3"}}
  %res = f32[128,128]{1,0} get-tuple-element(%loop), index=1
  ROOT %out = f32[128,128]{1,0} add(%res, %table), metadata={op_name="jit(step)/add" stack_frame_id=5}
}
"""

GPU_BUFFER_ASSIGNMENT = """\
BufferAssignment:
allocation 0: size 65536, output shape is |f32[128,128]|, maybe-live-out:
 value: <20 out @0> (size=65536,offset=0): f32[128,128]{1,0}
allocation 1: size 65536, parameter 0, shape |f32[128,128]| at ShapeIndex {}:
 value: <1 x @0> (size=65536,offset=0): f32[128,128]{1,0}
allocation 2: size 65536, parameter 1, shape |f32[128,128]| at ShapeIndex {}:
 value: <2 w @0> (size=65536,offset=0): f32[128,128]{1,0}
allocation 3: size 256, constant:
 value: <3 table @0> (size=256,offset=0): f32[64]{0}
allocation 4: size 4456448, preallocated-temp:
 value: <4 wt @0> (size=65536,offset=0): f32[128,128]{0,1}
 value: <5 scale_fusion @0> (size=65536,offset=65536): f32[128,128]{1,0}
 value: <6 gemm{0} @0> (size=65536,offset=131072): f32[128,128]{1,0}
 value: <7 gemm{1} @0> (size=4194304,offset=196608): s8[4194304]{0}
 value: <8 cd @0> (size=65536,offset=0): f32[128,128]{1,0}
 value: <9 loop{1} (phi) @0> (size=65536,offset=0): f32[128,128]{1,0}
"""


def gpu_attribution(**kwargs) -> Attribution:
    return attribute_hlo(GPU_MODULE, buffer_assignment=GPU_BUFFER_ASSIGNMENT, read_source_lines=False,
                         exclude_dirs=(), **kwargs)


def test_stack_frame_tables_are_parsed_innermost_first():
    module = parse_hlo_module(GPU_MODULE)
    ins = module.computations["fused_scale"].by_name["m"]
    assert module.source_stack(ins) == [
        SourceFrame("/src/model.py", 3, "layer"),
        SourceFrame("/src/model.py", 10, "step"),
        SourceFrame("/src/train.py", 40, "<module>"),
    ]


def test_old_style_source_file_metadata():
    text = """HloModule m
ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  ROOT %e = f32[8]{0} exponential(%p), metadata={op_name="jit(f)/exp" source_file="/a/b.py" source_line=7}
}
"""
    result = attribute_hlo(text, read_source_lines=False, exclude_dirs=())
    assert [(a.file, a.line, a.kernels) for a in result.lines] == [("/a/b.py", 7, ["e"])]


def test_gpu_kernels_inside_command_buffers_and_loops_get_their_lines():
    result = gpu_attribution()
    kernels = {k.name: k for k in result.kernels}
    assert set(kernels) == {"wt", "scale_fusion", "gemm", "cs", "next", "lt", "out"}
    # Frames outside the jitted function (train.py's call) are dropped.
    assert kernels["scale_fusion"].lines == [line_key("/src/model.py", 3), line_key("/src/model.py", 10)]
    assert kernels["scale_fusion"].own_lines == [line_key("/src/model.py", 3)]
    assert kernels["gemm"].kind == "custom-call:__cublas$gemm"
    assert kernels["cs"].launches == 3 and kernels["lt"].launches == 4 and kernels["gemm"].launches == 1
    assert result.launches_per_run == 1 + 1 + 1 + 3 * 2 + 4 + 1


def test_gpu_temporaries_come_from_the_buffer_assignment():
    result = gpu_attribution()
    kernels = {k.name: k for k in result.kernels}
    assert kernels["scale_fusion"].temp_bytes == 65536
    assert kernels["gemm"].temp_bytes == 65536 + 4194304  # the result and cuBLAS's workspace
    assert kernels["cs"].temp_bytes == 65536  # the async copy's buffer, written by its *-done
    assert kernels["out"].temp_bytes == 0  # the program's output is not a temporary
    assert result.temp_bytes == 4456448
    line10 = result.line("/src/model.py", 10)
    assert line10.temp_bytes == 65536 and line10.temp_buffers == ["scale_fusion"]
    line11 = result.line("/src/model.py", 11)
    assert line11.kernels == ["gemm"] and line11.temp_bytes == 65536 + 4194304


def test_inserted_transpose_is_attributed_to_the_line_that_reads_it():
    result = gpu_attribution()
    wt = result.kernel("wt")
    assert wt.inserted and wt.moves_data
    # wt is read inside the command buffer by the gemm on model.py:11.
    assert result.line("/src/model.py", 11).copies == ["wt"]
    assert "wt" not in result.line("/src/model.py", 11).kernels


def test_constants_are_attributed_to_the_line_that_reads_them():
    result = gpu_attribution()
    assert result.constant_bytes == 256
    assert result.line("/src/model.py", 12).constant_bytes == 256


def test_shared_kernels_name_the_other_lines():
    result = gpu_attribution()
    assert result.shared_with("/src/model.py", 3, "scale_fusion") == [line_key("/src/model.py", 10)]


def test_json_round_trip():
    result = gpu_attribution()
    data = json.loads(json.dumps(result.to_json()))
    again = Attribution.from_json(data)
    assert again == result
    assert again.line("/src/model.py", 11).kernels == ["gemm"]


def test_buffer_assignment_parser_skips_phis_and_knows_temporaries():
    values = parse_buffer_assignment(GPU_BUFFER_ASSIGNMENT)
    names = [v.instruction for v in values]
    assert "loop" not in names  # a phi is not a new buffer
    assert {v.instruction for v in values if v.temporary} == {"wt", "scale_fusion", "gemm", "cd"}


def test_without_buffer_assignment_kernel_outputs_are_used():
    result = attribute_hlo(GPU_MODULE, read_source_lines=False, exclude_dirs=())
    assert result.temp_source == "kernel outputs"
    assert result.kernel("out").temp_bytes == 0
    assert result.kernel("scale_fusion").temp_bytes == 65536


# --- real programs on CPU -------------------------------------------------------


def _attribute(path: str, func: str, shape: tuple[int, ...]) -> Attribution:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from jaxfuse_lint.verify.attribution import attribute_compiled, compile_with_buffer_assignment
    from jaxfuse_lint.verify.loader import get_function, load_module, read_source

    module = load_module(read_source(path), path)
    fn = get_function(module, func, path)
    lowered = jax.jit(fn).lower(jax.ShapeDtypeStruct(shape, jnp.float32))
    compiled, text = compile_with_buffer_assignment(lowered)
    assert text is not None and "BufferAssignment" in text
    return attribute_compiled(lowered, compiled, buffer_assignment=text)


def _line_of(path: str, needle: str) -> int:
    with open(path, encoding="utf-8") as fh:
        return next(i for i, line in enumerate(fh, 1) if needle in line)


def test_sum_reduction_temporary_is_on_the_jnp_sum_line():
    path = os.path.join(PROOFS, "sum_reduction.py")
    result = _attribute(path, "f_sum_jax", (131072, 2))
    line = _line_of(path, "return x * 2 + jnp.sum(kvm * x, axis=1, keepdims=True)")
    account = result.line(path, line)
    assert account is not None and "jnp.sum" in account.text
    assert account.temp_bytes == 1 << 20  # the notebook's 1 MiB
    assert result.temp_bytes == 1 << 20
    assert len(account.kernels) == 2  # the k-mesh kernel and the reduction share this line
    # The call site of .lower() is not part of the program.
    assert all("test_runtime_attribution" not in a.file for a in result.lines)


def test_kmesh_temporary_is_on_the_k2_line():
    path = os.path.join(PROOFS, "kmesh_filter.py")
    result = _attribute(path, "f_filter_with_temp", (64, 64, 64))
    account = result.line(path, _line_of(path, "k2 = get_kmesh(rho, norm2=True)"))
    assert account is not None and account.function == "f_filter_with_temp"
    kmesh_bytes = 64 * 64 * 33 * 4
    assert account.temp_bytes >= kmesh_bytes
    # The kernel writing it runs once, before the loop.
    (writer,) = [result.kernel(name) for name in account.temp_buffers]
    assert writer.loop_depth == 0 and writer.launches == 1


# Older XLA: only the innermost frame, as source_file/source_line, and no location tables.
# An async-wrapped fusion and an all-reduce pair: their *-done instructions define the
# buffers, which belong to the *-start kernels.
ASYNC_MODULE = r"""
HloModule jit_train, is_scheduled=true

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%fused_exp (fp: f32[1024]) -> f32[1024] {
  %fp = f32[1024]{0} parameter(0)
  ROOT %e = f32[1024]{0} exponential(%fp), metadata={op_name="jit(train)/exp" source_file="/src/opt.py" source_line=21}
}

%async_wrapped (wp: f32[1024]) -> f32[1024] {
  %wp = f32[1024]{0} parameter(0)
  ROOT %wf = f32[1024]{0} fusion(%wp), kind=kLoop, calls=%fused_exp
}

ENTRY %main (g: f32[1024]) -> f32[1024] {
  %g = f32[1024]{0} parameter(0)
  %ar-start = f32[1024]{0} all-reduce-start(%g), replica_groups={}, to_apply=%add, metadata={op_name="jit(train)/psum" source_file="/src/opt.py" source_line=20}
  %ar-done = f32[1024]{0} all-reduce-done(%ar-start)
  %fs = ((f32[1024]{0}), f32[1024]{0}, s32[]) async-start(%ar-done), calls=%async_wrapped
  %fd = f32[1024]{0} async-done(%fs)
  ROOT %out = f32[1024]{0} negate(%fd), metadata={op_name="jit(train)/neg" source_file="/src/opt.py" source_line=22}
}
"""

ASYNC_BUFFER_ASSIGNMENT = """\
BufferAssignment:
allocation 0: size 4096, output shape is |f32[1024]|, maybe-live-out:
 value: <9 out @0> (size=4096,offset=0): f32[1024]{0}
allocation 1: size 4096, parameter 0, shape |f32[1024]| at ShapeIndex {}:
 value: <1 g @0> (size=4096,offset=0): f32[1024]{0}
allocation 2: size 8192:
 value: <2 ar-done @0> (size=4096,offset=0): f32[1024]{0}
 value: <3 fd @0> (size=4096,offset=4096): f32[1024]{0}
 value: <4 fs{} @0> (size=16,offset=0): ((f32[1024]{0}), f32[1024]{0}, s32[])
"""


def test_async_pairs_and_old_style_locations():
    result = attribute_hlo(ASYNC_MODULE, buffer_assignment=ASYNC_BUFFER_ASSIGNMENT, read_source_lines=False,
                           exclude_dirs=())
    kernels = {k.name: k for k in result.kernels}
    assert set(kernels) == {"ar-start", "fs", "out"}
    assert kernels["fs"].kind == "fusion:kLoop (async)"
    # The wrapped fusion's exponential is the async kernel's operation.
    assert kernels["fs"].lines == [line_key("/src/opt.py", 21)]
    assert kernels["ar-start"].temp_bytes == 4096 and kernels["fs"].temp_bytes == 4096
    assert result.line("/src/opt.py", 20).temp_bytes == 4096
    assert result.line("/src/opt.py", 21).kernels == ["fs"]
    assert result.temp_bytes == 8192


def test_stack_frames_printed_with_plain_parent_ids():
    # Some XLA versions print the parent's own id, 0 meaning none.
    text = """HloModule m

FileNames
1 "/a.py"

FunctionNames
1 "f"
2 "g"

FileLocations
1 {file_name_id=1 function_name_id=1 line=5 end_line=5 column=1 end_column=2}
2 {file_name_id=1 function_name_id=2 line=9 end_line=9 column=1 end_column=2}

StackFrames
1 {file_location_id=1 parent_frame_id=0}
2 {file_location_id=2 parent_frame_id=1}

ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  ROOT %e = f32[8]{0} exponential(%p), metadata={op_name="jit(f)/exp" stack_frame_id=2}
}
"""
    module = parse_hlo_module(text)
    assert module.source_stack(module.entry.root) == [SourceFrame("/a.py", 9, "g"), SourceFrame("/a.py", 5, "f")]


def test_work_without_a_location_inherits_the_lines_it_continues():
    # XLA expands some operations (a cumsum into reduce-windows) into kernels with no metadata.
    text = """HloModule jit_f
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
%fused_sin (p: f32[64,16]) -> f32[64,16] {
  %p = f32[64,16]{1,0} parameter(0)
  ROOT %sin = f32[64,16]{1,0} sine(%p), metadata={op_name="jit(f)/sin" source_file="/m.py" source_line=7}
}
%fused_window (q: f32[64,16], z: f32[]) -> f32[64,16] {
  %q = f32[64,16]{1,0} parameter(0)
  %z = f32[] parameter(1)
  ROOT %rw = f32[64,16]{1,0} reduce-window(%q, %z), window={size=1x16 pad=0_0x15_0}, to_apply=%sum
}
ENTRY %main (x: f32[64,16]) -> f32[64,16] {
  %x = f32[64,16]{1,0} parameter(0)
  %zero = f32[] constant(0)
  %sin_fusion = f32[64,16]{1,0} fusion(%x), kind=kLoop, calls=%fused_sin, metadata={op_name="jit(f)/sin" source_file="/m.py" source_line=7}
  %window_fusion = f32[64,16]{1,0} fusion(%sin_fusion, %zero), kind=kLoop, calls=%fused_window
  ROOT %neg = f32[64,16]{1,0} negate(%window_fusion), metadata={op_name="jit(f)/neg" source_file="/m.py" source_line=8}
}
"""
    result = attribute_hlo(text, read_source_lines=False, exclude_dirs=())
    window = result.kernel("window_fusion")
    assert window.inferred and window.lines == ["/m.py:7"] and not window.inserted
    assert result.line("/m.py", 7).kernels == ["sin_fusion", "window_fusion"]
    assert result.unattributed_kernels == []


# -- issue 41, item 8: a captured constant's lines are the user's, not those of the `.lower()` call ------

LOWERED_CONSTANT = """HloModule jit_f

FileNames
1 "/site-packages/click/core.py"
2 "/work/jaxfuse_lint/verify/measure.py"
3 "/home/me/ex.py"

FunctionNames
1 "Context.invoke"
2 "measure"
3 "f"

FileLocations
1 {file_name_id=1 function_name_id=1 line=911 end_line=911 column=1 end_column=2}
2 {file_name_id=2 function_name_id=2 line=134 end_line=134 column=1 end_column=2}
3 {file_name_id=3 function_name_id=3 line=9 end_line=9 column=5 end_column=20}
4 {file_name_id=3 function_name_id=3 line=10 end_line=10 column=5 end_column=20}

StackFrames
1 {file_location_id=1 parent_frame_id=1}
2 {file_location_id=2 parent_frame_id=2}
3 {file_location_id=3 parent_frame_id=3}
4 {file_location_id=4 parent_frame_id=3}

%fused_add (p0: f32[512,512], p1: f32[512,512]) -> f32[512,512] {
  %p0 = f32[512,512]{1,0} parameter(0)
  %p1 = f32[512,512]{1,0} parameter(1)
  %two = f32[] constant(2)
  %b = f32[512,512]{1,0} broadcast(%two), dimensions={}, metadata={op_name="jit(f)/jit(f)/mul" stack_frame_id=3}
  %m = f32[512,512]{1,0} multiply(%p0, %b), metadata={op_name="jit(f)/jit(f)/mul" stack_frame_id=3}
  ROOT %a = f32[512,512]{1,0} add(%m, %p1), metadata={op_name="jit(f)/jit(f)/add" stack_frame_id=4}
}

ENTRY %main (x: f32[512,512]) -> f32[512,512] {
  %x = f32[512,512]{1,0} parameter(0), metadata={op_name="x"}
  %noise = f32[512,512]{1,0} constant({...}), metadata={op_name="jit(f)/jit(f)" stack_frame_id=2}
  ROOT %fusion = f32[512,512]{1,0} fusion(%x, %noise), kind=kLoop, calls=%fused_add, metadata={op_name="jit(f)/jit(f)/add" stack_frame_id=4}
}
"""


def test_a_captured_constant_is_on_the_user_line_that_reads_it_not_on_the_lowering_call():
    """jax lowers a captured NumPy array with the Python stack of the `.lower()` call (explain's own frames,
    click's core.py:911 outermost): none of it is in the function. The constant belongs to the line that
    reads it (ex.py:10), as every other cost does."""
    module = parse_hlo_module(LOWERED_CONSTANT)
    constant = module.entry.by_name["noise"]
    assert [f.file for f in module.source_stack(constant)] == ["/work/jaxfuse_lint/verify/measure.py",
                                                               "/site-packages/click/core.py"]
    result = attribute_hlo(LOWERED_CONSTANT, read_source_lines=False, exclude_dirs=("/work/jaxfuse_lint",))
    (c,) = result.constants
    assert c.lines == [line_key("/home/me/ex.py", 10)]
    assert result.line("/home/me/ex.py", 10).constant_bytes == 512 * 512 * 4
    assert result.line("/site-packages/click/core.py", 911) is None
    assert {a.file for a in result.lines} == {"/home/me/ex.py"}
