"""The part of ONNX's model format (``onnx.proto``) that :mod:`core.llm.embedding.minilm_graph` writes,
without onnx.

Why: the ``onnx`` package (31 MB, and ``ml_dtypes``) was installed only to serialize one graph, once.
ONNX Runtime already depends on ``protobuf``, so the message classes are built here at run time, from a
``FileDescriptorProto`` of package ``onnx`` in ``onnx.proto``'s proto2 syntax, holding only the fields
used. Field names, numbers, types, labels and ``packed`` options are onnx.proto's own, so the bytes are an
ONNX model (``tests/cold/test_onnx_proto.py`` compares every field with the ``onnx`` package's descriptors
and checks a model with ``onnx.checker``). The classes live in a private descriptor pool: ``onnx``'s
own, where a test imports it, is left alone.

The helpers mirror ``onnx.helper``'s: :func:`make_node`, :func:`make_tensor`,
:func:`make_tensor_value_info`, :func:`make_graph` and :func:`make_model`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

if TYPE_CHECKING:
    import numpy as np

IR_VERSION = 8
"""The IR version of the release that brought opset 17 (onnx 1.12): ONNX Runtime reads IR 3 up to its own."""
OPSET = 17
"""The default ONNX opset of :func:`make_model`: the first with LayerNormalization."""

# Each field: (name, number, "[repeated] type [packed] [oneof]"); a type that is not a scalar names a
# message or an enum of this file. Messages and enums nested in another are written "Outer.Inner".
_MESSAGES: dict[str, tuple[tuple[str, int, str], ...]] = {
    "ModelProto": (
        ("ir_version", 1, "int64"),
        ("opset_import", 8, "repeated OperatorSetIdProto"),
        ("producer_name", 2, "string"),
        ("producer_version", 3, "string"),
        ("domain", 4, "string"),
        ("model_version", 5, "int64"),
        ("doc_string", 6, "string"),
        ("graph", 7, "GraphProto"),
        ("metadata_props", 14, "repeated StringStringEntryProto"),
    ),
    "OperatorSetIdProto": (("domain", 1, "string"), ("version", 2, "int64")),
    "StringStringEntryProto": (("key", 1, "string"), ("value", 2, "string")),
    "GraphProto": (
        ("node", 1, "repeated NodeProto"),
        ("name", 2, "string"),
        ("initializer", 5, "repeated TensorProto"),
        ("doc_string", 10, "string"),
        ("input", 11, "repeated ValueInfoProto"),
        ("output", 12, "repeated ValueInfoProto"),
        ("value_info", 13, "repeated ValueInfoProto"),
    ),
    "NodeProto": (
        ("input", 1, "repeated string"),
        ("output", 2, "repeated string"),
        ("name", 3, "string"),
        ("op_type", 4, "string"),
        ("domain", 7, "string"),
        ("attribute", 5, "repeated AttributeProto"),
        ("doc_string", 6, "string"),
    ),
    "AttributeProto": (
        ("name", 1, "string"),
        ("doc_string", 13, "string"),
        ("type", 20, "AttributeProto.AttributeType"),
        ("f", 2, "float"),
        ("i", 3, "int64"),
        ("s", 4, "bytes"),
        ("t", 5, "TensorProto"),
        ("floats", 7, "repeated float"),
        ("ints", 8, "repeated int64"),
        ("strings", 9, "repeated bytes"),
    ),
    "TensorProto": (
        ("dims", 1, "repeated int64"),
        ("data_type", 2, "int32"),
        ("float_data", 4, "repeated float packed"),
        ("int32_data", 5, "repeated int32 packed"),
        ("int64_data", 7, "repeated int64 packed"),
        ("name", 8, "string"),
        ("doc_string", 12, "string"),
        ("raw_data", 9, "bytes"),
    ),
    "ValueInfoProto": (("name", 1, "string"), ("type", 2, "TypeProto"), ("doc_string", 3, "string")),
    "TypeProto": (("tensor_type", 1, "TypeProto.Tensor oneof"), ("denotation", 6, "string")),
    "TypeProto.Tensor": (("elem_type", 1, "int32"), ("shape", 2, "TensorShapeProto")),
    "TensorShapeProto": (("dim", 1, "repeated TensorShapeProto.Dimension"),),
    "TensorShapeProto.Dimension": (
        ("dim_value", 1, "int64 oneof"),
        ("dim_param", 2, "string oneof"),
        ("denotation", 3, "string"),
    ),
}
_ENUMS: dict[str, tuple[tuple[str, int], ...]] = {
    "AttributeProto.AttributeType": (
        ("UNDEFINED", 0), ("FLOAT", 1), ("INT", 2), ("STRING", 3), ("TENSOR", 4), ("GRAPH", 5),
        ("SPARSE_TENSOR", 11), ("TYPE_PROTO", 13), ("FLOATS", 6), ("INTS", 7), ("STRINGS", 8),
        ("TENSORS", 9), ("GRAPHS", 10), ("SPARSE_TENSORS", 12), ("TYPE_PROTOS", 14),
    ),
    "TensorProto.DataType": (
        ("UNDEFINED", 0), ("FLOAT", 1), ("UINT8", 2), ("INT8", 3), ("UINT16", 4), ("INT16", 5), ("INT32", 6),
        ("INT64", 7), ("STRING", 8), ("BOOL", 9), ("FLOAT16", 10), ("DOUBLE", 11), ("UINT32", 12),
        ("UINT64", 13), ("COMPLEX64", 14), ("COMPLEX128", 15), ("BFLOAT16", 16),
    ),
}
_ONEOF = "value"
"""The name of onnx.proto's one ``oneof`` in each message that has one (TypeProto, Dimension)."""
_SCALARS = {name: getattr(descriptor_pb2.FieldDescriptorProto, f"TYPE_{name.upper()}")
            for name in ("int64", "int32", "float", "string", "bytes")}


def file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    """The subset of onnx.proto as a ``FileDescriptorProto`` (package ``onnx``, proto2)."""
    Field = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(name="agentos/onnx_subset.proto", package="onnx",
                                              syntax="proto2")
    messages: dict[str, descriptor_pb2.DescriptorProto] = {}
    for qualified, fields in _MESSAGES.items():
        outer, _, inner = qualified.rpartition(".")
        message = messages[outer].nested_type.add() if outer else file.message_type.add()
        message.name = inner
        messages[qualified] = message
        for name, number, kind in fields:
            words = kind.split()
            field = message.field.add(name=name, number=number, label=Field.LABEL_OPTIONAL)
            if words[0] == "repeated":
                field.label = Field.LABEL_REPEATED
                words.pop(0)
            type_name, *flags = words
            if type_name in _SCALARS:
                field.type = _SCALARS[type_name]
            else:
                field.type = Field.TYPE_ENUM if type_name in _ENUMS else Field.TYPE_MESSAGE
                field.type_name = f".onnx.{type_name}"
            if "packed" in flags:
                field.options.packed = True
            if "oneof" in flags:
                if not message.oneof_decl:
                    message.oneof_decl.add(name=_ONEOF)
                field.oneof_index = 0
    for qualified, values in _ENUMS.items():
        outer, _, inner = qualified.rpartition(".")
        enum = messages[outer].enum_type.add(name=inner)
        for name, number in values:
            enum.value.add(name=name, number=number)
    return file


def _classes() -> dict[str, type]:
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(file_descriptor().SerializeToString())
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"onnx.{name}"))
            for name in _MESSAGES if "." not in name}


_CLASSES = _classes()
ModelProto = _CLASSES["ModelProto"]
OperatorSetIdProto = _CLASSES["OperatorSetIdProto"]
StringStringEntryProto = _CLASSES["StringStringEntryProto"]
GraphProto = _CLASSES["GraphProto"]
NodeProto = _CLASSES["NodeProto"]
AttributeProto = _CLASSES["AttributeProto"]
TensorProto = _CLASSES["TensorProto"]
ValueInfoProto = _CLASSES["ValueInfoProto"]
TypeProto = _CLASSES["TypeProto"]
TensorShapeProto = _CLASSES["TensorShapeProto"]

_DATA_TYPES = {"float32": TensorProto.FLOAT, "int64": TensorProto.INT64, "int32": TensorProto.INT32,
               "int8": TensorProto.INT8}
"""ONNX's element type of each numpy dtype :func:`make_tensor` takes."""


def make_attribute(name: str, value: Any) -> Any:
    """An ``AttributeProto`` of an int, float, str/bytes, numpy array, or a list of ints or floats."""
    import numpy as np

    attribute = AttributeProto(name=name)
    if isinstance(value, bool | int | np.integer):
        attribute.i, attribute.type = int(value), AttributeProto.INT
    elif isinstance(value, float | np.floating):
        attribute.f, attribute.type = float(value), AttributeProto.FLOAT
    elif isinstance(value, str | bytes):
        attribute.s = value.encode() if isinstance(value, str) else value
        attribute.type = AttributeProto.STRING
    elif isinstance(value, np.ndarray):
        attribute.t.CopyFrom(make_tensor(value))
        attribute.type = AttributeProto.TENSOR
    elif isinstance(value, Sequence) and value and all(isinstance(v, int | np.integer) for v in value):
        attribute.ints.extend(int(v) for v in value)
        attribute.type = AttributeProto.INTS
    elif isinstance(value, Sequence) and value and all(isinstance(v, int | float | np.number) for v in value):
        attribute.floats.extend(float(v) for v in value)
        attribute.type = AttributeProto.FLOATS
    else:
        raise ValueError(f"attribute {name!r}: cannot write {value!r} as an ONNX attribute")
    return attribute


def make_node(op_type: str, inputs: Sequence[str], outputs: Sequence[str], name: str = "",
              domain: str = "", **attributes: Any) -> Any:
    """A ``NodeProto``; its attributes sorted by name, as ``onnx.helper.make_node`` writes them."""
    node = NodeProto(op_type=op_type, input=list(inputs), output=list(outputs))
    if name:
        node.name = name
    if domain:
        node.domain = domain
    node.attribute.extend(make_attribute(key, value) for key, value in sorted(attributes.items()))
    return node


def make_tensor(array: "np.ndarray", name: str = "") -> Any:
    """A ``TensorProto`` of ``array`` (float32, int64, int32 or int8), its data as little-endian
    ``raw_data``."""
    import numpy as np

    array = np.asarray(array)
    if array.dtype.name not in _DATA_TYPES:
        raise ValueError(f"tensor {name!r}: dtype {array.dtype} is not one of {sorted(_DATA_TYPES)}")
    tensor = TensorProto(dims=array.shape, data_type=_DATA_TYPES[array.dtype.name],
                         raw_data=np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes())
    if name:
        tensor.name = name
    return tensor


def make_tensor_value_info(name: str, elem_type: int, shape: Sequence[int | str]) -> Any:
    """A ``ValueInfoProto`` of a tensor: ints in ``shape`` are fixed sizes, strings named (free) ones."""
    info = ValueInfoProto(name=name)
    tensor_type = info.type.tensor_type
    tensor_type.elem_type = elem_type
    tensor_type.shape.SetInParent()  # a rank-0 shape is still a shape, unlike a missing one
    for size in shape:
        dim = tensor_type.shape.dim.add()
        if isinstance(size, str):
            dim.dim_param = size
        else:
            dim.dim_value = size
    return info


def make_graph(nodes: Sequence[Any], name: str, inputs: Sequence[Any], outputs: Sequence[Any],
               initializers: Sequence[Any] = ()) -> Any:
    """A ``GraphProto`` of ``nodes`` (in topological order), its inputs, outputs and constant tensors."""
    return GraphProto(node=nodes, name=name, input=inputs, output=outputs, initializer=initializers)


def make_model(graph: Any, *, opset: int = OPSET, producer_name: str = "", producer_version: str = "",
               metadata: Mapping[str, str] | None = None) -> Any:
    """A ``ModelProto`` of ``graph`` at :data:`IR_VERSION` importing the default domain's ``opset``,
    with ``metadata`` as its ``metadata_props``."""
    model = ModelProto(ir_version=IR_VERSION, graph=graph,
                       opset_import=[OperatorSetIdProto(domain="", version=opset)])
    if producer_name:
        model.producer_name = producer_name
    if producer_version:
        model.producer_version = producer_version
    model.metadata_props.extend(StringStringEntryProto(key=k, value=v) for k, v in (metadata or {}).items())
    return model
