"""passlens's own compiler as an explorer adapter, in a folder like `explorer/tvm/` and
`explorer/inductor/`:

- `adapter.py`: the `explorer.adapters.Adapter` (registered by name on first use),
  with passlens's capabilities the other adapters lack: a step's module as ONNX
  (`to_onnx`), what a rule of its rule tables does (`rule_doc`), a loaded trace's kernels
  made again (`after_load`) and its reducer (`reduce`);
- `source.py`: what `explore` accepts, imported with passlens's frontends;
- `record.py`: `explore` / `trace_from_module`, the pass manager run with its recorder;
- `convert.py`: passlens's IR as the neutral graph model (`explorer.graph`);
- `backend.py`: a compiled step's stage, loop IR / LLVM IR / assembly, executable, artifact,
  and `relower` (the kernels of a loaded trace);
- `check.py`: the interpreter as the check's `explorer.check.runner.StepRunner`
  (per-node values, a value cache shared by every step), with `memo.py` (values of nodes a
  pass rebuilt around the same values) and `tie_judging.py` (indices of tied values);
- `reduce/`: the reducer (cuts of passlens's IR, ddmin over its pipelines, the check as the
  oracle, the pytest file); `explorer.reduce` keeps what every reducer shares
  (`Reduction`, `ReduceError`, `NotReproducible`, `reduce`, which runs the adapter's).

The rule (tests/test_layers.py holds it): **nothing outside an adapter's folder names a
compiler's internals.** passlens's compiler is the one compiler whose IR is also the
explorer's neutral IR, so a neutral module of explorer/ (anything outside
`explorer/passlens/`, `explorer/tvm/`, `explorer/inductor/`) may import from compiler/
only what every compiler's trace shares:

- `compiler.ir`: the IR itself (nodes, types, `Constant` weights, `Provenance`, the
  parser and printer, `verify`, structural equality): what every adapter's modules hold their
  weights and provenance in, what the diff, the store, the detectors and the reducer read;
- the error classes of `compiler` (`PasslensError`, `LimitError`, `TypeMismatch`,
  `InterpretError`): one family of errors at the API boundary, whichever compiler ran;
- the pass manager's records in `compiler.passes` (`Snapshot`, `SkippedPass`,
  `CallingConvention`): what every adapter's recorder and runner build steps and calling
  conventions from;
- `compiler.opaque`, the opaque-op sandbox, which every adapter's reference run goes through
  (a torch or ONNX op passlens has no converter for, and the source model itself, run by its
  own framework): the trust policy (`trusted_ops`, `trust_names`, `trusted`,
  `refused`, `refused_message`, `refusal`, `OpaqueOpError`), the runners and sizing
  (`RUNNERS`, `check_kernel_shapes`, `memory_budget`, `BudgetError`), the onnxruntime
  child process (`run_onnx_model`, and `ModelRefusedError` when onnxruntime refuses the
  model itself, which the check reports as a warning) and what an op printed (`escape`);
- the float64 reference's matmul (`matmul_float64`, of `compiler`): the reference of every
  compiler's torch source accumulates a product in float64 a block at a time, as passlens's
  interpreter does, so the two are one arithmetic.

A name is on that list only while a module outside this folder takes it (a neutral one, TVM's
or Inductor's) and its package exports it. The frontends, the exporter, the backend, the op
registry, the interpreter, the passes, the rule tables and the pipeline machinery are
passlens's internals: only this folder names them. What a neutral module needs of them is an
`explorer.adapters.Adapter` method, which other adapters answer with a default
(`rule_doc`: no words; `after_load`: nothing to do) or a clear error
(`to_onnx`: `explorer.adapters.Unsupported`; `reduce`: `explorer.ReduceError`).
tests/test_layers.py lists the neutral modules still excepted, each with its reason: none.

A neutral module reaches this folder only for a step of passlens's IR, which cannot show
itself as another compiler's module does (compiler/ imports nothing of the explorer):
`explorer.step` takes its graph model from `convert.py` and its backend views from
`backend.py`; `explorer.explore` / `explorer.trace_from_module` come from `record.py`.
"""
