"""passlens's own compiler as an explorer adapter, in a folder like ``explorer/tvm/`` and
``explorer/inductor/``:

- ``adapter.py``: the :class:`~explorer.adapters.Adapter` (registered by name on first use);
- ``source.py``: what ``explore`` accepts, imported with passlens's frontends;
- ``record.py``: ``explore`` / ``trace_from_module``, the pass manager run with its recorder;
- ``convert.py``: passlens's IR as the neutral graph model (:mod:`explorer.graph`);
- ``backend.py``: a compiled step's stage, loop IR / LLVM IR / assembly, executable, artifact;
- ``check.py``: the interpreter as the check's :class:`~explorer.check.runner.StepRunner`
  (per-node values, a value cache shared by every step), with ``memo.py`` (values of nodes a
  pass rebuilt around the same values) and ``tie_judging.py`` (indices of tied values).

The rule (tests/test_layers.py holds it): **nothing outside an adapter's folder names a
compiler's internals.** passlens's compiler is the one compiler whose IR is also the
explorer's neutral IR, so a neutral module of explorer/ (anything outside
``explorer/passlens/``, ``explorer/tvm/``, ``explorer/inductor/``) may import from compiler/
only:

- ``compiler.ir``: the IR itself (nodes, types, ``Constant`` weights, ``Provenance``, the
  parser and printer, ``verify``, structural equality): what every adapter's modules hold their
  weights and provenance in, what the diff, the store, the detectors and the reducer read;
- the error classes of ``compiler`` (``PasslensError``, ``LimitError``, ``TypeMismatch``,
  ``InterpretError``): one family of errors at the API boundary, whichever compiler ran;
- the pass manager's records in ``compiler.passes`` (``Snapshot``, ``SkippedPass``,
  ``CallingConvention``, ``PipelineError``): what every adapter's recorder and runner build
  steps and calling conventions from.

The frontends, the backend, the op registry, the interpreter, the passes and the pipeline
machinery are passlens's internals: only this folder names them, with the exceptions
tests/test_layers.py lists by module, each with its reason (the check's references and the
trust policy run every compiler's source with compiler.ops' runners; passlens's reducer,
its store of kernels, its ONNX export and its rule docs are passlens's and still sit where
they were). A neutral module reaches this folder only for a step of passlens's IR, which
cannot show itself as another compiler's module does (compiler/ imports nothing of the
explorer): ``explorer.step`` takes its graph model from ``convert.py`` and its backend views
from ``backend.py``; ``explorer.explore`` / ``explorer.trace_from_module`` come from
``record.py``.
"""
