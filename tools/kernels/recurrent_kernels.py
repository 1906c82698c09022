"""This project's recurrent layers in Triton: nn.RNN, nn.LSTM and nn.GRU, for candidates that must
not call a library RNN (torch.compile cannot trace them at all: "Attempted to wrap RNN, GRU, or
LSTM"; issue 33).

`triton_lstm(x, h0, c0, weights, num_layers, bidirectional, batch_first, has_bias)` ->
`(output, h_n, c_n)`, `triton_gru(x, h0, weights, ...)` -> `(output, h_n)` and
`triton_rnn(x, h0, weights, ..., nonlinearity)` -> `(output, h_n)` take the arguments of the
drafter's custom ops (`tools/draft/recurrent.py`, `tagent::lstm` ...): `weights` is the module's
`_flat_weights` (per layer and direction `w_ih, w_hh[, b_ih, b_hh]`), `h0`/`c0` may be None
(zeros). Semantics as PyTorch's (dropout 0): gate order LSTM i, f, g, o; GRU r, z, n with
n = tanh(W_in x + b_in + r * (W_hn h + b_hn)); multi-layer, bidirectional, batch_first either way.
Outputs are contiguous, as the custom ops' fake implementations say (Inductor's kernels after
the call index them with those strides).

Two kernels a layer (docs/compiler-drafter.md, "Recurrent layers", says why):
- `_rnn_input_proj_kernel`: the input projection of every time step as ONE GEMM up front,
  G[d, t, b, :] = x[t, b, :] @ W_ih[d]^T + b_ih[d], rows (t, b) read with the input's strides.
- `_rnn_recurrence_kernel`: persistent, one program per (block of BLOCK_B batch rows,
  direction) over all T steps: gates = G[t] + h_{t-1} @ W_hh^T + b_hh, then the cell. h_{t-1}
  is read back from the output row written at the step before, c lives in c_n's rows, and a
  barrier (`tl.debug_barrier`) ends each step; W_hh streams from L2 every step.

Precision, fp32's own at any input scale (tests/test_recurrent_accuracy.py; the evidence is in
docs/compiler-drafter.md, "Recurrent layers"): tf32x3 products (`tl.dot`), fp32 accumulation,
fp16/bf16 operands widened first; tanh and sigmoid from IEEE-rounded operations alone
(`_rnn_exp`, `tl.div_rn`; tanh's odd polynomial below |x| = 0.4), within 2.1 ulps over
1e-8..1e3, so the interpreter measures what a GPU computes; the GRU's update in PyTorch's order,
n + z (h - n) ((1 - z) n + z h drifted an ulp a step: level3/40's x100 `mismatch`, session 19).
tl.dot needs tiles of at least 16 on a GPU: BLOCK_B = 16 batch rows (masked); `RNN_CONFIG` has
the other launch parameters.

PIPELINE (a launch keyword, off until measured on a GPU): a unidirectional stack's layers in one
recurrence launch, layer l computing step t (its own input projection included) once layer l-1
has released it through a flag, so the layers run a step apart instead of one after another.

On the H200 at KernelBench's sizes: correct, 0.35x (LSTM) to 0.65x (GRU) of cuDNN, 45 us a
layer-step (benchmarks/results/gpu/2026-12-02-recurrent). The code between the `candidate
source` markers is self-contained: `candidate_source()` copies it into compiler drafts.
"""

from __future__ import annotations

# --- candidate source begin (copied verbatim into compiler drafts) ---
import torch
import triton
import triton.language as tl


@triton.jit
def _rnn_exp(x):
    # exp(x) within ~1 ulp at any argument, from IEEE arithmetic alone: no libdevice (the
    # interpreter has none), and not tl.exp, which a GPU computes as ex2.approx(x * log2(e))
    # with that product rounded to fp32, an error growing with |x| (57 ulps in a sigmoid at
    # |x| = 10..100). x = k ln2 + r: k * LN2_HI is exact (9 + 8 significant bits) and so is
    # x - k * LN2_HI (Sterbenz), |r| <= ln2 / 2; e^r from its Taylor polynomial of degree 7
    # (the next term is 2^-27 of it); 2^k from its bits, in two factors so that e^89 overflows
    # to inf and e^-104 underflows to 0 through one rounding, as fp32 does. NaN stays NaN.
    xc = tl.where(x > 89.0, 89.0, tl.where(x < -104.0, -104.0, x))
    k = tl.floor(xc * 1.4426950408889634 + 0.5)
    r = (xc - k * 0.693359375) - k * -2.12194440e-4
    p = 1.0 + r * (1.0 + r * (0.5 + r * (1.0 / 6 + r * (1.0 / 24 + r * (
        1.0 / 120 + r * (1.0 / 720 + r * (1.0 / 5040)))))))  # fmt: skip
    ki = tl.where(k == k, k, 0.0).to(tl.int32)  # NaN: p is NaN already
    k1 = ki // 2
    s1 = ((k1 + 127) << 23).to(tl.float32, bitcast=True)
    s2 = ((ki - k1 + 127) << 23).to(tl.float32, bitcast=True)
    return p * s1 * s2


@triton.jit
def _rnn_sigmoid(x):
    # e = exp(-|x|) <= 1: 1 / (1 + e) for x >= 0, e / (1 + e) below, both within ~2 ulps (no
    # exp of a large argument to overflow, and the tiny values of x < -87 stay values, not 0).
    # tl.div_rn: IEEE division (a GPU's `/` on fp32 is div.full.f32, up to 2 ulps).
    e = _rnn_exp(-tl.abs(x))
    return tl.div_rn(tl.where(x < 0, e, 1.0), 1.0 + e)


@triton.jit
def _rnn_tanh(x):
    # Accurate in relative terms at any argument (the hidden state is often small): below
    # |x| = 0.4 the odd Taylor polynomial to x^13 (the next term is under 2^-27 of tanh x;
    # (1 - e) / (1 + e) there loses 1 - e's leading bits: 7,000 ulps at 1e-4, 0 for x < 3e-8);
    # above it (1 - e) / (1 + e) with e = exp(-2|x|) <= 0.45, within ~2 ulps.
    x2 = x * x
    p = x + x * x2 * (-1.0 / 3 + x2 * (2.0 / 15 + x2 * (-17.0 / 315 + x2 * (62.0 / 2835 + x2 * (
        -1382.0 / 155925 + x2 * (21844.0 / 6081075))))))  # fmt: skip
    e = _rnn_exp(-2.0 * tl.abs(x))
    t = tl.div_rn(1.0 - e, 1.0 + e)
    return tl.where(tl.abs(x) < 0.4, tl.where(x == 0.0, x, p), tl.where(x < 0, -t, t))  # -0 too


@triton.jit
def _rnn_input_proj_kernel(
    x_ptr, w_ptr, b_ptr, g_ptr, M, B, N, K,
    stride_xt, stride_xb, stride_xk, stride_wn, stride_wk, stride_bn, stride_gm,
    HAS_BIAS: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    # G[m, n] = sum_k x[t, b, k] * W[n, k] + bias[n], row m = t * B + b (G contiguous in rows).
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_m = rm < M
    mask_n = rn < N
    rows = (rm // B) * stride_xt + (rm % B) * stride_xb
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        mask_k = rk < K
        a = tl.load(
            x_ptr + rows[:, None] + rk[None, :] * stride_xk,
            mask=mask_m[:, None] & mask_k[None, :],
            other=0.0,
        ).to(tl.float32)
        w = tl.load(
            w_ptr + rn[None, :] * stride_wn + rk[:, None] * stride_wk,
            mask=mask_k[:, None] & mask_n[None, :],
            other=0.0,
        ).to(tl.float32)
        acc = tl.dot(a, w, acc, input_precision=PRECISION)
    if HAS_BIAS:
        acc += tl.load(b_ptr + rn * stride_bn, mask=mask_n, other=0.0).to(tl.float32)[None, :]
    tl.store(
        g_ptr + rm[:, None] * stride_gm + rn[None, :], acc, mask=mask_m[:, None] & mask_n[None, :]
    )


@triton.jit
def _rnn_gate_product(acc, h, w_tile, w_mask, gate_offset, PRECISION: tl.constexpr):
    # acc += h @ W_hh[gate rows]^T; w_tile points at gate 0's [BLOCK_K, BLOCK_N] tile.
    w = tl.load(w_tile + gate_offset, mask=w_mask, other=0.0).to(tl.float32)
    return tl.dot(h, w, acc, input_precision=PRECISION)


@triton.jit
def _rnn_wait(flag, target):
    # Spin until *flag >= target (acquire: the producer's stores before its release are seen).
    seen = tl.atomic_add(flag, 0, sem="acquire")
    while seen < target:
        seen = tl.atomic_add(flag, 0, sem="acquire")


@triton.jit
def _rnn_copy_kernel(src_ptr, dst_ptr, N1, N2, total, ss0, ss1, ss2, ds0, ds1, ds2,
                     BLOCK: tl.constexpr):  # fmt: skip
    # dst[i0, i1, i2] = src[i0, i1, i2] (any strides, dst's dtype): weights packed per layer.
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < total
    i0 = i // (N1 * N2)
    i1 = (i // N2) % N1
    i2 = i % N2
    v = tl.load(src_ptr + i0 * ss0 + i1 * ss1 + i2 * ss2, mask=mask)
    tl.store(dst_ptr + i0 * ds0 + i1 * ds1 + i2 * ds2, v.to(dst_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rnn_zero_kernel(ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(ptr + i, tl.zeros((BLOCK,), dtype=ptr.dtype.element_ty), mask=i < n)


@triton.jit
def _rnn_recurrence_kernel(
    g_ptr, w0_ptr, w1_ptr, b0_ptr, b1_ptr, h0_ptr, c0_ptr, out_ptr, hn_ptr, cn_ptr,
    wih_ptr, bih_ptr, flag_ptr, stride_wl, stride_bl, stride_ol,
    T, B, H,
    stride_gd, stride_gt, stride_gb,
    stride_w0n, stride_w0k, stride_w1n, stride_w1k, stride_b0, stride_b1,
    stride_h0d, stride_h0b, stride_h0k, stride_c0d, stride_c0b, stride_c0k,
    stride_ot, stride_ob, stride_ok, stride_hnd, stride_hnb, stride_cnd, stride_cnb,
    MODE: tl.constexpr, HAS_H0: tl.constexpr, HAS_C0: tl.constexpr, HAS_BIAS: tl.constexpr,
    PRECISION: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    PIPELINE: tl.constexpr,
):  # fmt: skip
    # MODE: 0 RNN tanh, 1 RNN relu, 2 LSTM (gates i, f, g, o), 3 GRU (gates r, z, n).
    # One layer: program (batch block, direction d); d = 1 runs time backwards. hn/cn/h0/c0
    # point at this layer's first direction; out at the layer's output (T, B, D*H), its strides.
    # PIPELINE (unidirectional stacks): program (batch block, layer d), every layer in one
    # launch. W_hh, b_hh (w0, b0), W_ih and b_ih of layers 1.. (wih, bih) are packed per layer
    # (stride_wl, stride_bl); out holds every layer's output (stride_ol); G only layer 0's.
    # Layer d computes step t once layer d-1 has (flag_ptr[d-1, batch block] > t), so the
    # layers run at once, a step apart: (T + layers) steps of time instead of T * layers.
    pid_b = tl.program_id(0)
    d = tl.program_id(1)
    rb = pid_b * BLOCK_B + tl.arange(0, BLOCK_B)
    mask_b = rb < B
    if PIPELINE:
        rev = 0
        w_ptr = w0_ptr + d * stride_wl
        b_ptr = b0_ptr + d * stride_bl
        stride_wn = stride_w0n
        stride_wk = stride_w0k
        stride_b = stride_b0
        g_base = g_ptr + rb[:, None] * stride_gb
        out_dir = out_ptr + d * stride_ol
        use_g = mask_b & ((rb * 0 + d) == 0)  # layer 0 reads G; the others project x here
        nb = tl.num_programs(0)
    else:
        rev = d
        w_ptr = w0_ptr
        b_ptr = b0_ptr
        stride_wn = stride_w0n
        stride_wk = stride_w0k
        stride_b = stride_b0
        if d == 1:
            w_ptr = w1_ptr
            b_ptr = b1_ptr
            stride_wn = stride_w1n
            stride_wk = stride_w1k
            stride_b = stride_b1
        g_base = g_ptr + d * stride_gd + rb[:, None] * stride_gb
        out_dir = out_ptr + d * H * stride_ok
        use_g = mask_b
    for step in range(0, T):
        t = step + rev * (T - 1 - 2 * step)  # forward: step; backward: T - 1 - step
        if PIPELINE:
            if d > 0:  # wait for layer d-1's step t (its output row t is this step's input)
                _rnn_wait(flag_ptr + (d - 1) * nb + pid_b, step + 1)
                tl.debug_barrier()
        # h_{t-1}: h0 at the first step (zeros without one), else the output row written
        # one step before (t - 1 forward, t + 1 backward).
        h_base = h0_ptr + d * stride_h0d + rb[:, None] * stride_h0b
        h_sk = stride_h0k
        if step > 0:
            h_base = out_dir + (t - 1 + 2 * rev) * stride_ot + rb[:, None] * stride_ob
            h_sk = stride_ok
        # False only at the first step without h0 (h = 0). Per row, not a 0-d tensor: Triton
        # 3.9's interpreter makes `block_mask & (0-d comparison)` int32, which tl.store refuses.
        h_live = mask_b & ((rb * 0 + step + HAS_H0) > 0)
        at_end = mask_b & ((rb * 0 + step) == T - 1)
        for n0 in range(0, H, BLOCK_N):
            rn = n0 + tl.arange(0, BLOCK_N)
            mask_n = rn < H
            mask_bn = mask_b[:, None] & mask_n[None, :]
            acc0 = tl.zeros((BLOCK_B, BLOCK_N), dtype=tl.float32)
            acc1 = tl.zeros((BLOCK_B, BLOCK_N), dtype=tl.float32)
            acc2 = tl.zeros((BLOCK_B, BLOCK_N), dtype=tl.float32)
            acc3 = tl.zeros((BLOCK_B, BLOCK_N), dtype=tl.float32)
            x_n = tl.zeros((BLOCK_B, BLOCK_N), dtype=tl.float32)  # PIPELINE GRU: W_in x + b_in
            gate_rows = H * stride_wn  # W_hh's rows: gate 0's H, then gate 1's...
            if PIPELINE:
                if d > 0:  # x_t @ W_ih^T + b_ih, x_t = layer d-1's output row t
                    x_base = out_ptr + (d - 1) * stride_ol + t * stride_ot + rb[:, None] * stride_ob
                    wx_ptr = wih_ptr + (d - 1) * stride_wl
                    for k0 in range(0, H, BLOCK_K):
                        rk = k0 + tl.arange(0, BLOCK_K)
                        mask_k = rk < H
                        # .cg: not from L1, which another SM's stores do not update
                        xk = tl.load(
                            x_base + rk[None, :] * stride_ok,
                            mask=mask_b[:, None] & mask_k[None, :],
                            other=0.0,
                            cache_modifier=".cg",
                        )
                        w_tile = wx_ptr + rn[None, :] * stride_wn + rk[:, None] * stride_wk
                        w_mask = mask_k[:, None] & mask_n[None, :]
                        acc0 = _rnn_gate_product(acc0, xk, w_tile, w_mask, 0, PRECISION)
                        if MODE >= 2:
                            acc1 = _rnn_gate_product(acc1, xk, w_tile, w_mask, gate_rows, PRECISION)
                        if MODE == 2:
                            acc2 = _rnn_gate_product(
                                acc2, xk, w_tile, w_mask, 2 * gate_rows, PRECISION
                            )  # fmt: skip
                            acc3 = _rnn_gate_product(
                                acc3, xk, w_tile, w_mask, 3 * gate_rows, PRECISION
                            )  # fmt: skip
                        if MODE == 3:  # GRU's n: W_in x apart from r * (W_hn h + b_hn)
                            x_n = _rnn_gate_product(
                                x_n, xk, w_tile, w_mask, 2 * gate_rows, PRECISION
                            )  # fmt: skip
                    if HAS_BIAS:
                        bx_ptr = bih_ptr + d * stride_bl
                        acc0 += tl.load(bx_ptr + rn * stride_b, mask=mask_n, other=0.0)[None, :]
                        if MODE >= 2:
                            acc1 += tl.load(
                                bx_ptr + (H + rn) * stride_b, mask=mask_n, other=0.0
                            )[None, :]  # fmt: skip
                        if MODE == 2:
                            acc2 += tl.load(
                                bx_ptr + (2 * H + rn) * stride_b, mask=mask_n, other=0.0
                            )[None, :]  # fmt: skip
                        if MODE == 3:
                            x_n += tl.load(
                                bx_ptr + (2 * H + rn) * stride_b, mask=mask_n, other=0.0
                            )[None, :]  # fmt: skip
                        if MODE == 2:
                            acc3 += tl.load(
                                bx_ptr + (3 * H + rn) * stride_b, mask=mask_n, other=0.0
                            )[None, :]  # fmt: skip
            for k0 in range(0, H, BLOCK_K):
                rk = k0 + tl.arange(0, BLOCK_K)
                mask_k = rk < H
                h = tl.load(
                    h_base + rk[None, :] * h_sk,
                    mask=h_live[:, None] & mask_k[None, :],
                    other=0.0,
                ).to(tl.float32)
                # Pointers and mask once for every gate's tile (the interpreter pays per op).
                w_tile = w_ptr + rn[None, :] * stride_wn + rk[:, None] * stride_wk
                w_mask = mask_k[:, None] & mask_n[None, :]
                acc0 = _rnn_gate_product(acc0, h, w_tile, w_mask, 0, PRECISION)
                if MODE >= 2:
                    acc1 = _rnn_gate_product(acc1, h, w_tile, w_mask, gate_rows, PRECISION)
                    acc2 = _rnn_gate_product(acc2, h, w_tile, w_mask, 2 * gate_rows, PRECISION)
                if MODE == 2:
                    acc3 = _rnn_gate_product(acc3, h, w_tile, w_mask, 3 * gate_rows, PRECISION)
            if HAS_BIAS:
                acc0 += tl.load(b_ptr + rn * stride_b, mask=mask_n, other=0.0)[None, :]
                if MODE >= 2:
                    acc1 += tl.load(b_ptr + (H + rn) * stride_b, mask=mask_n, other=0.0)[None, :]
                    acc2 += tl.load(
                        b_ptr + (2 * H + rn) * stride_b, mask=mask_n, other=0.0
                    )[None, :]  # fmt: skip
                if MODE == 2:
                    acc3 += tl.load(
                        b_ptr + (3 * H + rn) * stride_b, mask=mask_n, other=0.0
                    )[None, :]  # fmt: skip
            g_row = g_base + t * stride_gt + rn[None, :]
            mask_g = use_g[:, None] & mask_n[None, :]
            x0 = tl.load(g_row, mask=mask_g, other=0.0)
            if MODE == 0:
                h_new = _rnn_tanh(x0 + acc0)
            elif MODE == 1:
                h_new = tl.maximum(x0 + acc0, 0.0)
            elif MODE == 2:
                gate_i = _rnn_sigmoid(x0 + acc0)
                gate_f = _rnn_sigmoid(tl.load(g_row + H, mask=mask_g, other=0.0) + acc1)
                gate_g = _rnn_tanh(tl.load(g_row + 2 * H, mask=mask_g, other=0.0) + acc2)
                gate_o = _rnn_sigmoid(tl.load(g_row + 3 * H, mask=mask_g, other=0.0) + acc3)
                c_at = cn_ptr + d * stride_cnd + rb[:, None] * stride_cnb + rn[None, :]
                if step == 0:
                    c_prev = tl.zeros((BLOCK_B, BLOCK_N), dtype=tl.float32)
                    if HAS_C0:
                        c_prev = tl.load(
                            c0_ptr + d * stride_c0d + rb[:, None] * stride_c0b
                            + rn[None, :] * stride_c0k,
                            mask=mask_bn,
                            other=0.0,
                        ).to(tl.float32)  # fmt: skip
                else:
                    c_prev = tl.load(c_at, mask=mask_bn, other=0.0).to(tl.float32)
                c = gate_f * c_prev + gate_i * gate_g
                tl.store(c_at, c.to(cn_ptr.dtype.element_ty), mask=mask_bn)
                h_new = gate_o * _rnn_tanh(c)
            else:
                gate_r = _rnn_sigmoid(x0 + acc0)
                gate_z = _rnn_sigmoid(tl.load(g_row + H, mask=mask_g, other=0.0) + acc1)
                x_n += tl.load(g_row + 2 * H, mask=mask_g, other=0.0)
                gate_n = _rnn_tanh(x_n + gate_r * acc2)
                h_prev = tl.load(
                    h_base + rn[None, :] * h_sk, mask=h_live[:, None] & mask_n[None, :], other=0.0
                ).to(tl.float32)
                # h' = n + z (h - n), not (1 - z) n + z h: where z is within an ulp of 1 and h
                # stays put (h ~ 1.0003, n ~ 1: level3/40 at x100), z * h rounds at h's ulp every
                # step and the same way every step, 2e-5 over 500 steps; z (h - n) rounds at
                # (h - n)'s, and the fixed point stays fixed (PyTorch's order; a GPU fuses it into
                # one fma).
                h_new = gate_n + gate_z * (h_prev - gate_n)
            h_out = h_new.to(out_ptr.dtype.element_ty)
            tl.store(
                out_dir + t * stride_ot + rb[:, None] * stride_ob + rn[None, :] * stride_ok,
                h_out,
                mask=mask_bn,
            )
            tl.store(
                hn_ptr + d * stride_hnd + rb[:, None] * stride_hnb + rn[None, :],
                h_out,
                mask=at_end[:, None] & mask_n[None, :],
            )
        # Every thread's part of h_t (and c_t) is stored before any thread reads it next step.
        tl.debug_barrier()
        if PIPELINE:  # step t of layer d done: release it to layer d + 1
            tl.atomic_xchg(flag_ptr + d * nb + pid_b, step + 1, sem="release")


RNN_CONFIG = {
    "BLOCK_B": 16, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 8, "num_stages": 3,
    "precision": "tf32x3", "PIPELINE": False,
}  # fmt: skip
"""The recurrence kernel's launch parameters (each launcher takes them as keywords, for the
tuner): tl.dot needs tiles of at least 16 on a GPU, so 16 batch rows (masked) a program.
64x32 tiles at 8 warps: the fastest of 10 tf32x3 configs on the H200 for level3/40's GRU (108
ms against 139 ms at 32x32, 4 warps) and within 0.2% of the fastest for level3/36's LSTM (138
against 192 ms); `precision="ieee"` (FMA) was 3-6x slower (benchmarks/results/gpu/2026-12-02-recurrent).
PIPELINE: a unidirectional stack of layers in one launch, the layers a step apart. Off by
default until measured on a GPU: correct under the interpreter and compiled for sm_90, but its
flags (one program waiting on another's release) have not run on real hardware yet; the
layer-by-layer path has (H200, KernelBench sizes: 1e-7 from fp64, benchmarks/gpu_recurrent.py)."""

_RNN_MODES = {"RNN_TANH": (0, 1), "RNN_RELU": (1, 1), "LSTM": (2, 4), "GRU": (3, 3)}
"""mode -> (the recurrence kernel's MODE, gates: rows of W_ih/W_hh per hidden unit)."""


def _rnn_layers(mode, x, h0, c0, weights, num_layers, bidirectional, batch_first, has_bias,
                config):  # fmt: skip
    """Every layer: its input projection (one GEMM a direction), then its recurrence (one
    persistent launch for both directions). Returns (output, h_n, c_n or None)."""
    unknown = set(config) - set(RNN_CONFIG)
    if unknown:
        raise TypeError(f"unknown launch parameters {sorted(unknown)}; known: {sorted(RNN_CONFIG)}")
    cfg = {**RNN_CONFIG, **config}
    kernel_mode, gates = _RNN_MODES[mode]
    if cfg["PIPELINE"] and not bidirectional and num_layers > 1:
        return _rnn_pipelined(kernel_mode, gates, x, h0, c0, weights, num_layers, batch_first,
                              has_bias, cfg)  # fmt: skip
    dirs = 2 if bidirectional else 1
    per_layer = 4 if has_bias else 2
    if len(weights) != num_layers * dirs * per_layer:
        raise ValueError(f"{len(weights)} weights for {num_layers} layers x {dirs} directions")
    hidden = weights[1].shape[1]
    if batch_first:
        batch, steps = x.shape[0], x.shape[1]
        sxt, sxb = x.stride(1), x.stride(0)
    else:
        steps, batch = x.shape[0], x.shape[1]
        sxt, sxb = x.stride(0), x.stride(1)
    device = x.device
    shape = (batch, steps, dirs * hidden) if batch_first else (steps, batch, dirs * hidden)
    output = torch.empty(shape, dtype=x.dtype, device=device)
    h_n = torch.empty((num_layers * dirs, batch, hidden), dtype=x.dtype, device=device)
    c_n = torch.empty_like(h_n) if kernel_mode == 2 else None
    # fp32 inside: G for both directions, the inner layers' outputs (ping-pong between two).
    g = torch.empty((dirs, steps, batch, gates * hidden), dtype=torch.float32, device=device)
    inner = [torch.empty((steps, batch, dirs * hidden), dtype=torch.float32, device=device)
             for _ in range(min(num_layers - 1, 2))]  # fmt: skip
    n_gates = gates * hidden
    rows = steps * batch
    layer_in, lsxt, lsxb, lsxk = x, sxt, sxb, x.stride(2)
    for layer in range(num_layers):
        last = layer == num_layers - 1
        out = output if last else inner[layer % 2]
        if out is output:
            sot, sob = (output.stride(1), output.stride(0)) if batch_first else output.stride()[:2]
        else:
            sot, sob = out.stride(0), out.stride(1)
        ws = [weights[(layer * dirs + d) * per_layer : (layer * dirs + d + 1) * per_layer]
              for d in range(dirs)]  # fmt: skip
        in_features = layer_in.shape[-1]
        for d in range(dirs):
            w_ih = ws[d][0]
            b_ih = ws[d][2] if has_bias else w_ih
            _rnn_input_proj_kernel[(triton.cdiv(rows, 64), triton.cdiv(n_gates, 64))](
                layer_in, w_ih, b_ih, g[d], rows, batch, n_gates, in_features,
                lsxt, lsxb, lsxk, w_ih.stride(0), w_ih.stride(1), b_ih.stride(0), g.stride(2),
                HAS_BIAS=has_bias, PRECISION="tf32x3", BLOCK_M=64, BLOCK_N=64, BLOCK_K=32,
                num_warps=4,
            )  # fmt: skip
        w0, w1 = ws[0][1], ws[-1][1]
        b0 = ws[0][3] if has_bias else w0
        b1 = ws[-1][3] if has_bias else w1
        first = layer * dirs
        hx = h0[first] if h0 is not None else h_n[first]
        cx = c0[first] if c0 is not None else h_n[first]
        hn_l = h_n[first]
        cn_l = c_n[first] if c_n is not None else h_n[first]
        _rnn_recurrence_kernel[(triton.cdiv(batch, cfg["BLOCK_B"]), dirs)](
            g, w0, w1, b0, b1, hx, cx, out, hn_l, cn_l,
            w0, b0, hn_l, 0, 0, 0,  # PIPELINE's packed weights and flags: unused here
            steps, batch, hidden,
            g.stride(0), g.stride(1), g.stride(2),
            w0.stride(0), w0.stride(1), w1.stride(0), w1.stride(1),
            b0.stride(0), b1.stride(0),
            h0.stride(0) if h0 is not None else 0, hx.stride(0), hx.stride(1),
            c0.stride(0) if c0 is not None else 0, cx.stride(0), cx.stride(1),
            sot, sob, out.stride(2), h_n.stride(0), h_n.stride(1),
            cn_l.stride(0) if c_n is None else c_n.stride(0), cn_l.stride(0),
            MODE=kernel_mode, HAS_H0=h0 is not None, HAS_C0=c0 is not None,
            HAS_BIAS=has_bias, PRECISION=cfg["precision"], BLOCK_B=cfg["BLOCK_B"],
            BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"], PIPELINE=False,
            num_warps=cfg["num_warps"], num_stages=cfg["num_stages"],
        )  # fmt: skip
        layer_in, lsxt, lsxb, lsxk = out, out.stride(0), out.stride(1), out.stride(2)
    return output, h_n, c_n


def _rnn_copy(src, dst):
    """dst[...] = src[...] for tensors of the same shape (up to 3-D), any strides."""
    pad = 3 - src.dim()
    shape = (1,) * pad + tuple(src.shape)
    total = src.numel()
    _rnn_copy_kernel[(triton.cdiv(total, 1024),)](
        src, dst, shape[1], shape[2], total,
        *((0,) * pad + tuple(src.stride())), *((0,) * pad + tuple(dst.stride())), BLOCK=1024,
    )  # fmt: skip


def _rnn_pipelined(kernel_mode, gates, x, h0, c0, weights, num_layers, batch_first, has_bias,
                   cfg):  # fmt: skip
    """A unidirectional stack in one recurrence launch (PIPELINE): layer 0's input projection
    as one GEMM; the other layers' projections inside the recurrence, a step behind the layer
    before. The weights are packed per layer first (copies: 11 MiB for KernelBench's LSTM)."""
    per_layer = 4 if has_bias else 2
    if len(weights) != num_layers * per_layer:
        raise ValueError(f"{len(weights)} weights for {num_layers} layers")
    hidden = weights[1].shape[1]
    n_gates = gates * hidden
    if batch_first:
        batch, steps = x.shape[0], x.shape[1]
        sxt, sxb = x.stride(1), x.stride(0)
    else:
        steps, batch = x.shape[0], x.shape[1]
        sxt, sxb = x.stride(0), x.stride(1)
    device, f32 = x.device, torch.float32
    shape = (batch, steps, hidden) if batch_first else (steps, batch, hidden)
    output = torch.empty(shape, dtype=x.dtype, device=device)
    h_n = torch.empty((num_layers, batch, hidden), dtype=x.dtype, device=device)
    c_n = torch.empty_like(h_n) if kernel_mode == 2 else h_n
    w_hh = torch.empty((num_layers, n_gates, hidden), dtype=f32, device=device)
    w_ih = torch.empty((num_layers - 1, n_gates, hidden), dtype=f32, device=device)
    b_hh = torch.empty((num_layers, n_gates), dtype=f32, device=device)
    b_ih = torch.empty((num_layers, n_gates), dtype=f32, device=device)
    for layer in range(num_layers):
        lw = weights[layer * per_layer : (layer + 1) * per_layer]
        _rnn_copy(lw[1], w_hh[layer])
        if layer > 0:
            _rnn_copy(lw[0], w_ih[layer - 1])
        if has_bias:
            _rnn_copy(lw[2], b_ih[layer])
            _rnn_copy(lw[3], b_hh[layer])
    g = torch.empty((1, steps, batch, n_gates), dtype=f32, device=device)
    w0_ih = weights[0]
    b0_ih = weights[2] if has_bias else w0_ih
    rows = steps * batch
    _rnn_input_proj_kernel[(triton.cdiv(rows, 64), triton.cdiv(n_gates, 64))](
        x, w0_ih, b0_ih, g[0], rows, batch, n_gates, x.shape[-1],
        sxt, sxb, x.stride(2), w0_ih.stride(0), w0_ih.stride(1), b0_ih.stride(0), g.stride(2),
        HAS_BIAS=has_bias, PRECISION="tf32x3", BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, num_warps=4,
    )  # fmt: skip
    outs = torch.empty((num_layers, steps, batch, hidden), dtype=f32, device=device)
    n_blocks = triton.cdiv(batch, cfg["BLOCK_B"])
    flags = torch.empty((num_layers, n_blocks), dtype=torch.int32, device=device)
    _rnn_zero_kernel[(triton.cdiv(flags.numel(), 1024),)](flags, flags.numel(), BLOCK=1024)
    hx = h0 if h0 is not None else h_n
    cx = c0 if c0 is not None else h_n
    _rnn_recurrence_kernel[(n_blocks, num_layers)](
        g, w_hh, w_hh, b_hh, b_hh, hx, cx, outs, h_n, c_n,
        w_ih, b_ih, flags, w_hh.stride(0), b_hh.stride(0), outs.stride(0),
        steps, batch, hidden,
        g.stride(0), g.stride(1), g.stride(2),
        w_hh.stride(1), w_hh.stride(2), w_hh.stride(1), w_hh.stride(2),
        b_hh.stride(1), b_hh.stride(1),
        hx.stride(0), hx.stride(1), hx.stride(2), cx.stride(0), cx.stride(1), cx.stride(2),
        outs.stride(1), outs.stride(2), outs.stride(3), h_n.stride(0), h_n.stride(1),
        c_n.stride(0), c_n.stride(1),
        MODE=kernel_mode, HAS_H0=h0 is not None, HAS_C0=c0 is not None,
        HAS_BIAS=has_bias, PRECISION=cfg["precision"], BLOCK_B=cfg["BLOCK_B"],
        BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"], PIPELINE=True,
        num_warps=cfg["num_warps"], num_stages=cfg["num_stages"],
    )  # fmt: skip
    _rnn_copy(outs[num_layers - 1], output.transpose(0, 1) if batch_first else output)
    return output, h_n, (c_n if kernel_mode == 2 else None)


def triton_lstm(x, h0, c0, weights, num_layers, bidirectional, batch_first, has_bias, **config):
    """nn.LSTM's forward (dropout 0, no projection): (output, h_n, c_n). `config`: RNN_CONFIG."""
    return _rnn_layers("LSTM", x, h0, c0, weights, num_layers, bidirectional, batch_first,
                       has_bias, config)  # fmt: skip


def triton_gru(x, h0, weights, num_layers, bidirectional, batch_first, has_bias, **config):
    """nn.GRU's forward (dropout 0): (output, h_n). `config`: RNN_CONFIG."""
    output, h_n, _ = _rnn_layers("GRU", x, h0, None, weights, num_layers, bidirectional,
                                 batch_first, has_bias, config)  # fmt: skip
    return output, h_n


def triton_rnn(
    x, h0, weights, num_layers, bidirectional, batch_first, has_bias, nonlinearity, **config
):
    """nn.RNN's forward (dropout 0; nonlinearity 'tanh' or 'relu'): (output, h_n)."""
    mode = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}[nonlinearity]
    output, h_n, _ = _rnn_layers(mode, x, h0, None, weights, num_layers, bidirectional,
                                 batch_first, has_bias, config)  # fmt: skip
    return output, h_n


# --- candidate source end ---

RECURRENT_FUNCTIONS = ("triton_lstm", "triton_gru", "triton_rnn")
"""The launchers a candidate calls, one for each of the drafter's custom ops."""

PRECISION_NOTE = (
    "recurrent layers in Triton (tools.kernels.recurrent_kernels: the input projection of all steps as "
    "one GEMM, then a persistent kernel a layer looping over time); fp32 products with tl.dot "
    "input_precision='tf32x3' (not plain TF32), fp32 accumulation and state"
)


def candidate_source() -> str:
    """The self-contained source of the kernels and launchers, for a candidate file."""
    with open(__file__) as f:
        text = f.read()
    begin = text.index("# --- candidate source begin")
    begin = text.index("\n", begin) + 1
    end = text.index("# --- candidate source end ---")
    return (
        "# Recurrent layers in Triton (copied from triton-agent's tools/kernels/recurrent_kernels.py).\n"
        + (text[begin:end].strip() + "\n")
    )
