"""`to_onnx`: an IR Module -> onnx.ModelProto (ai.onnx opset 17 or newer) that opens in
Netron and runs in onnxruntime.

`main` becomes the graph: its parameters the graph inputs (symbolic dims as `dim_param`
with the symbol's name), named Constants initializers under their names (unnamed ones get
`const_N`), every binding one or a few ONNX nodes, an If an ONNX If whose branch graphs read
outer values directly, a call of another function of the module is inlined, and a Tuple output
gives several graph outputs. A symbolic dim used by an op (a reshape target `[n, 128]`, an
arange bound) is computed from the shape of a graph input that has it.

Each ONNX node is named by the torch module path its IR node came from, the way
torch.onnx.export names them: `/stages.0/blocks.0/pwconv1/MatMul` (a module path's numeric
parts stay with the name before them, as torch's scopes do; a node without one is `/MatMul`;
repeats get `_1`, `_2`, ...). Netron and Model Explorer group and search by those
namespaces, and `from_onnx` reads the module path back from them. Each node also carries its
IR node's provenance as `metadata_props` (`passlens.module`, `passlens.op`,
`passlens.node`, `passlens.file`, `passlens.pass`) and as its doc string, so Netron shows
where it came from. Its outputs are named after the IR node's name hint, else its op.

The exporters are split by op family, one module each, named as compiler/ops/ names the
family of the op (`elementwise`, `nn`, `reduce`, `shape`, `index`, `quantize`,
`bitwise`, `lowp`, `opaque`); `registry` holds the registry and the opsets,
`writer` the graph writer and `to_onnx`, `common` what several families share.
Importing this package registers every exporter: each module other than the shared ones is a
family, so a new family only needs its own file.
"""

import importlib as _importlib
import pkgutil as _pkgutil

from compiler.export.onnx.registry import DEFAULT_OPSET, EXPORTERS, MIN_OPSET, ExportError, exporter
from compiler.export.onnx.writer import node_scope, to_onnx

SHARED = ("common", "registry", "writer")  # the modules that are not an op family

for _info in _pkgutil.iter_modules(__path__):
    if _info.name not in SHARED:
        _importlib.import_module(f"{__name__}.{_info.name}")

__all__ = [
    "DEFAULT_OPSET",
    "EXPORTERS",
    "MIN_OPSET",
    "ExportError",
    "exporter",
    "node_scope",
    "to_onnx",
]
