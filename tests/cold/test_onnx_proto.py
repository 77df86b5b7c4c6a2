"""core.llm.embedding.onnx_proto writes ONNX models without the onnx package: its fields are onnx.proto's, its
helpers write what onnx.helper writes, and the encoder's graph passes onnx's checker.

The onnx package is a test dependency only: it is the reference here.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from google.protobuf import descriptor_pb2
from onnx import helper, numpy_helper

from core.llm.embedding import minilm_onnx
from core.llm.embedding import onnx_proto
from core.llm.embedding.minilm_graph import build_model_bytes


def _ours() -> dict[str, descriptor_pb2.DescriptorProto]:
    """Each message of onnx_proto's file (nested ones too) by its full name."""
    found: dict[str, descriptor_pb2.DescriptorProto] = {}

    def walk(prefix: str, messages) -> None:
        for message in messages:
            found[f"{prefix}.{message.name}"] = message
            walk(f"{prefix}.{message.name}", message.nested_type)

    walk("onnx", onnx_proto.file_descriptor().message_type)
    return found


def _onnx_own(full_name: str) -> descriptor_pb2.DescriptorProto:
    proto = descriptor_pb2.DescriptorProto()
    onnx.ModelProto.DESCRIPTOR.file.pool.FindMessageTypeByName(full_name).CopyToProto(proto)
    return proto


@pytest.mark.parametrize("full_name", sorted(_ours()))
def test_every_field_is_onnx_protos_own(full_name):
    """Each field defined has onnx.proto's number, type, label, type name, options and oneof; each enum value
    its number; the file is proto2 in package onnx, as onnx.proto."""
    ours, theirs = _ours()[full_name], _onnx_own(full_name)
    their_fields = {f.name: f for f in theirs.field}
    assert ours.field, full_name
    for field in ours.field:
        assert field == their_fields[field.name], f"{full_name}.{field.name}"
        if field.HasField("oneof_index"):
            assert ours.oneof_decl[field.oneof_index].name == theirs.oneof_decl[field.oneof_index].name
    their_enums = {e.name: {v.name: v.number for v in e.value} for e in theirs.enum_type}
    for enum in ours.enum_type:
        assert {v.name: v.number for v in enum.value}.items() <= their_enums[enum.name].items(), enum.name
    file = onnx_proto.file_descriptor()
    their_file = descriptor_pb2.FileDescriptorProto()
    onnx.ModelProto.DESCRIPTOR.file.CopyToProto(their_file)
    assert (file.package, file.syntax or "proto2") == (their_file.package, their_file.syntax or "proto2")


def test_the_helpers_write_the_bytes_onnx_helper_writes():
    """Nodes with every kind of attribute used, tensors, value infos, a graph and a model with metadata: the
    same bytes as onnx.helper's, and they pass onnx's checker."""
    weight = np.arange(6, dtype=np.float32).reshape(2, 3)
    nodes = [
        (("MatMul", ["x", "w"], ["y"]), {}),
        (("Softmax", ["y"], ["s"]), {"axis": -1}),
        (("LayerNormalization", ["s", "g", "b"], ["n"]), {"axis": -1, "epsilon": 1e-12}),
        (("Transpose", ["n"], ["t"]), {"perm": [1, 0]}),
        (("ReduceL2", ["t"], ["r"]), {"axes": [1], "keepdims": 1}),
        (("Cast", ["r"], ["out"]), {"to": onnx_proto.TensorProto.INT64}),
    ]
    tensors = [(weight, "w"), (np.ones(3, np.float32), "g"), (np.zeros(3, np.float32), "b"),
               (np.array(2.5, np.float32), "scalar"), (np.array([0, 0, -1], np.int64), "shape")]
    inputs, outputs = [("x", 1, ["texts", 2])], [("out", 7, [3, "texts"])]

    def graph(h, tensor):
        return h.make_graph([h.make_node(*args, **kwargs) for args, kwargs in nodes], "g",
                             [h.make_tensor_value_info(*i) for i in inputs],
                             [h.make_tensor_value_info(*o) for o in outputs],
                             [tensor(array, name) for array, name in tensors])

    ours = onnx_proto.make_model(graph(onnx_proto, onnx_proto.make_tensor), producer_name="agentos",
                                 metadata={"source": "test"})
    theirs = helper.make_model(graph(helper, numpy_helper.from_array), producer_name="agentos",
                               ir_version=onnx_proto.IR_VERSION,
                               opset_imports=[helper.make_opsetid("", onnx_proto.OPSET)])
    helper.set_model_props(theirs, {"source": "test"})
    assert ours.SerializeToString() == theirs.SerializeToString()
    onnx.checker.check_model(onnx.load_from_string(ours.SerializeToString()), full_check=True)


def test_a_tensor_is_little_endian_raw_data_of_its_dtype():
    for array in (np.array([[1.5, -2.0]], np.float32), np.array([1, -1, 2**40], np.int64),
                  np.array([3, 4], dtype=">i4")):
        tensor = onnx.load_tensor_from_string(onnx_proto.make_tensor(array, "t").SerializeToString())
        assert np.array_equal(numpy_helper.to_array(tensor), array) and tensor.name == "t"
    with pytest.raises(ValueError, match="dtype float64"):
        onnx_proto.make_tensor(np.zeros(2), "t")
    with pytest.raises(ValueError, match="cannot write"):
        onnx_proto.make_attribute("a", [])


@pytest.mark.slow  # the whole graph, built from the weights
def test_the_encoders_model_passes_onnx_checker():
    """all-MiniLM-L6-v2's model bytes parse with onnx and pass its checker (shapes inferred too)."""
    model = onnx.load_from_string(build_model_bytes(minilm_onnx.model_dir()))
    onnx.checker.check_model(model, full_check=True)
    assert (model.ir_version, [(o.domain, o.version) for o in model.opset_import]) == (8, [("", 17)])
    assert [i.name for i in model.graph.input] == ["input_ids", "attention_mask"]
    assert [o.name for o in model.graph.output] == ["vector"]
    ops = {n.op_type for n in model.graph.node}
    assert ops >= {"Gather", "LayerNormalization", "Softmax", "Erf", "ReduceL2"}
