"""Instruction profiles read from real disassembly of small kernels, on every target.

One source with several small entry points is compiled once per target with
the project's NVRTC options and disassembled with nvdisasm, so each assertion
is about what the compiler really emitted.
"""
from __future__ import annotations

import pytest

from plugins.family.binary import profile_source
from plugins.family.compile import ARCHS
from plugins.family.sass import (
    loads_before_use,
    CLASSES,
    Counts,
    SassError,
    access_width,
    classify,
    loops_of,
    parse_nvdisasm,
    profile_text,
)

SOURCE = r"""
extern "C" __global__ void vec(const float4* __restrict__ x, float4* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}

// The seed's clamp loop as the issue found it: v is overwritten every pass, so
// only the last pass's shared load survives.
extern "C" __global__ void dead_loads(const float* __restrict__ x, float* __restrict__ out, float lo, float hi)
{
    __shared__ float tile[32][32];
    const int tx = threadIdx.x, ty = threadIdx.y;
    tile[tx][ty] = x[blockIdx.x * 1024 + ty * 32 + tx];
    __syncthreads();
    float v = 0.0f;
    for (int it = 0; it < 32; ++it) {
        v = fminf(fmaxf(tile[tx][ty], lo), hi);
        __syncthreads();
    }
    out[blockIdx.x * 1024 + ty * 32 + tx] = v;
}

// A loop whose trip count is only known at run time keeps its back-edge, and
// a value stored back each pass keeps its load and store.
extern "C" __global__ void kept_loop(const float* __restrict__ x, float* __restrict__ out, int passes, float lo, float hi)
{
    __shared__ float tile[32][32];
    const int tx = threadIdx.x, ty = threadIdx.y;
    tile[tx][ty] = x[blockIdx.x * 1024 + ty * 32 + tx];
    __syncthreads();
    for (int it = 0; it < passes; ++it) {
        tile[tx][ty] = fminf(fmaxf(tile[tx][ty], lo), hi);
        __syncthreads();
    }
    out[blockIdx.x * 1024 + ty * 32 + tx] = tile[tx][ty];
}

extern "C" __global__ void unroll4(const float* __restrict__ x, float* __restrict__ out, int n)
{
    float s = 0.0f;
    const float* row = x + (long long)blockIdx.x * n;
    #pragma unroll 4
    for (int i = 0; i < n; ++i) s += row[i] * row[i];
    out[blockIdx.x] = s;
}

extern "C" __global__ void mixed(const float* __restrict__ x, float* __restrict__ sum, unsigned int* __restrict__ bins, int n)
{
    __shared__ unsigned int hist[256];
    hist[threadIdx.x] = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? expf(x[i]) : 0.0f;
    atomicAdd(&hist[i & 255], 1u);
    v += __shfl_xor_sync(0xffffffffu, v, 16);
    __syncthreads();
    atomicAdd(&bins[threadIdx.x], hist[threadIdx.x]);
    if ((threadIdx.x & 31) == 0) atomicAdd(sum, v);
}

extern "C" __global__ void local_array(const float* __restrict__ x, float* __restrict__ out, int k)
{
    float a[32];
    for (int j = 0; j < 32; ++j) a[j] = x[threadIdx.x * 32 + j];
    for (int j = 0; j < k; ++j) a[(j * 7) & 31] += 1.0f;
    out[threadIdx.x] = a[k & 31];
}
"""


@pytest.fixture(scope="module", params=ARCHS)
def prof(request):
    return {p.kernel: p for p in profile_source(SOURCE, request.param)}


def test_every_kernel_is_profiled(prof):
    assert set(prof) == {"vec", "dead_loads", "kept_loop", "unroll4", "mixed", "local_array"}


def test_float4_copy_is_one_128_bit_load_and_store(prof):
    c = prof["vec"].counts
    assert (c["global_loads_128"], c["global_stores_128"], c["global_loads_32"]) == (1, 1, 0)
    assert c["vector_memory"] == 2 and prof["vec"].loops == ()


def test_dead_shared_loads_are_gone_from_the_binary(prof):
    """The issue's finding: 32 source loads, 1 in the binary; the barriers all stay."""
    c = prof["dead_loads"].counts
    assert c["shared_loads"] == 1 and c["shared_stores"] == 1 and c["barriers"] == 33
    assert prof["dead_loads"].loops == ()


def test_a_kept_loop_loads_stores_and_syncs_each_pass(prof):
    p = prof["kept_loop"]
    assert len(p.loops) >= 1
    body = max(p.loops, key=lambda lp: lp.counts["shared_loads"]).counts
    assert body["shared_loads"] >= 1 and body["shared_stores"] >= 1 and body["barriers"] >= 1
    assert body["branches"] >= 1


def test_unroll_pragma_shows_as_counter_step(prof):
    main = max(prof["unroll4"].loops, key=lambda lp: lp.counts["global_loads"])
    assert main.counts["global_loads"] == 4 and main.step == 4 and main.counts["ffma"] == 4


def test_special_function_atomics_and_shuffles(prof):
    c = prof["mixed"].counts
    assert c["special_function"] >= 1  # expf's MUFU.EX2
    assert c["shared_atomics"] == 1
    assert c["global_atomics"] == 2  # the bins and the sum
    assert c["shuffles"] == 1 and c["barriers"] == 2


def test_dynamically_indexed_array_goes_to_local_memory(prof):
    c = prof["local_array"].counts
    assert c["local_stores"] >= 1 and c["local_loads"] >= 1


# -- the parser on its own ---------------------------------------------------------

TEXT = """
//--------------------- .text.k0                  --------------------------
        .section        .text.k0,"ax",@progbits
k0:
.text.k0:
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   MOV R2, RZ ;
.L_x_1:
        /*0020*/                   LDG.E.64 R4, desc[UR4][R6.64] ;
        /*0030*/                   STS.128 [R0], R8 ;
        /*0040*/                   IADD3 R2, PT, PT, R2, 0x2, RZ ;
        /*0050*/                   ISETP.NE.AND P0, PT, R2, R3, PT ;
        /*0060*/               @P0 BRA `(.L_x_1) ;
        /*0070*/                   EXIT ;
.L_x_2:
        /*0080*/                   BRA `(.L_x_2);
        /*0090*/                   NOP;
//--------------------- .text.k1                  --------------------------
        .section        .text.k1,"ax",@progbits
        /*0000*/                   EXIT ;
"""


def test_parse_labels_loops_and_widths():
    funcs = {f.name: f for f in parse_nvdisasm(TEXT)}
    assert set(funcs) == {"k0", "k1"}
    k0 = funcs["k0"]
    assert [i.opcode for i in k0.instructions][-1] == "BRA"  # NOP dropped
    (loop,) = loops_of(k0)  # the trailing spin is not a loop
    assert (loop.start, loop.end, loop.depth, loop.step) == (0x20, 0x60, 0, 2)
    assert loop.counts["global_loads_64"] == 1 and loop.counts["shared_stores_128"] == 1
    assert loop.counts["vector_memory"] == 2
    prof = {p.kernel: p for p in profile_text(TEXT, "sm_90")}
    assert prof["k1"].counts["instructions"] == 1 and prof["k0"].counts["instructions"] == 9


def test_instructions_under_a_false_predicate_are_not_counted():
    text = TEXT.replace("        /*0070*/                   EXIT ;",
                        "        /*0068*/              @!PT LDS RZ, [RZ] ;\n"
                        "        /*006c*/             @!UPT UIADD3 UR4, UR4, 0x1, URZ ;\n"
                        "        /*0070*/               @P1 LDS R9, [R0] ;\n"
                        "        /*0078*/                   EXIT ;")
    k0 = {f.name: f for f in parse_nvdisasm(text)}["k0"]
    loads = [i for i in k0.instructions if i.opcode == "LDS"]
    assert [i.predicate for i in loads] == ["@P1"]  # a real predicate is kept
    assert not any(i.opcode == "UIADD3" for i in k0.instructions)


ORDER = """
        .section        .text.k0,"ax",@progbits
        /*0000*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0010*/                   LDG.E R8, desc[UR4][R10.64] ;
        /*0020*/                   STS [R12], R13 ;
        /*0030*/                   LDG.E.64 R14, desc[UR4][R16.64] ;
        /*0040*/                   FADD R20, R7, R21 ;
        /*0050*/                   LDG.E R22, desc[UR4][R2.64+0x10] ;
        /*0060*/                   EXIT ;
"""


def test_loads_before_use_stop_at_the_first_reader_of_any_loaded_register():
    (k0,) = parse_nvdisasm(ORDER)
    # R7 is the last register of the 128-bit load: the FADD waits, so three loads were in flight
    assert loads_before_use(k0.instructions) == 3
    assert Counts.of(k0.instructions)["global_loads_before_use"] == 3
    store_reads = ORDER.replace("STS [R12], R13", "STS [R12], R9")  # R9: outside R8's 32-bit load
    assert loads_before_use(parse_nvdisasm(store_reads)[0].instructions) == 3
    store_reads = ORDER.replace("STS [R12], R13", "STS [R12], R8")  # a store reads its data operand
    assert loads_before_use(parse_nvdisasm(store_reads)[0].instructions) == 2
    address_pair = ORDER.replace("LDG.E.64 R14, desc[UR4][R16.64]", "LDG.E.64 R14, desc[UR4][R8.64]")
    assert loads_before_use(parse_nvdisasm(address_pair)[0].instructions) == 2  # pointer chasing: R8 is an address
    overwrite = ORDER.replace("FADD R20, R7, R21", "MOV R7, R21")  # a destination is not a read
    assert loads_before_use(parse_nvdisasm(overwrite)[0].instructions) == 4


def test_parse_refuses_text_without_code():
    with pytest.raises(SassError, match="no .text"):
        parse_nvdisasm("nvdisasm fatal: bad file")


@pytest.mark.parametrize("mods, width", [((), 32), (("E", "128", "CONSTANT"), 128), (("U8",), 8),
                                         (("E", "LTC128B", "64"), 64), (("S16",), 16)])
def test_access_width(mods, width):
    assert access_width(mods) == width


def test_classes_are_known_and_counts_read_zero_when_absent():
    assert set(classify("REDG", ("E", "ADD", "F32"))) == {"instructions", "global_atomics"}
    assert set(classify("LDS", ("64",))) == {"instructions", "shared_loads", "shared_loads_64", "vector_memory"}
    assert set(classify("LDL", ("128",))) == {"instructions", "local_loads", "local_loads_128"}
    for opcode in ("LDG", "STS", "BAR", "MUFU", "SHFL", "FFMA", "ATOMS", "WARPSYNC"):
        assert set(classify(opcode)) <= set(CLASSES)
    assert Counts()["barriers"] == 0
