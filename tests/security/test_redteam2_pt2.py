"""Red-team round two: breaks of issue 39's promises by a crafted ``.pt2`` (torch.export.save,
then its JSON edited). Each runs in a child process under an address-space limit.

- The reference run of a program read from a file runs under a memory budget of
  ``PROGRAM_BUDGET + 2 * held`` (explorer/check/torch_program.py ``program_budget``), where
  ``held`` counts each weight's *elements*: a weight stored as 4 bytes but declared
  [32768, 32768] with strides [0, 0] (``torch.as_strided`` accepts it: one element is
  enough storage) counts as 4 GiB held, so the budget grows from 4 GiB to 12 GiB and the
  program allocates what the budget was there to stop.
- ``passlens explore x.pt2 --compiler tvm --check``: the CLI refuses untrusted calls
  (``refuse_untrusted_program``), which lets ``aten.empty`` through in the top graph on the
  promise that the reference run zero-fills it; but only the passlens compiler marks the
  source ``untrusted_program``, so with ``--compiler tvm`` the check's torch reference runs
  the program with the plain ``torch.fx.Interpreter``: no zero fill (the process's old heap
  bytes come back as the reference's values, and are shown as the finding's "inf" error) and
  no memory budget."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

torch = pytest.importorskip("torch")


def _save(module, args, path: Path) -> Path:
    torch.export.save(torch.export.export(module, args), str(path))
    return path


def _edit(src: Path, dst: Path, edits: dict) -> Path:
    """Copy the zip ``src`` to ``dst`` with each member ending in a key of ``edits`` (a JSON
    document) passed through that function."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            for suffix, fn in edits.items():
                if info.filename.endswith(suffix):
                    doc = json.loads(data)
                    fn(doc)
                    data = json.dumps(doc).encode()
            zout.writestr(info, data)
    return dst


def _run(code: str, limit_gib: int = 7) -> subprocess.CompletedProcess:
    child = f"import resource\nresource.setrlimit(resource.RLIMIT_AS, ({limit_gib} << 30, " \
        f"{limit_gib} << 30))\n" + textwrap.dedent(code)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", child], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=600, check=False,
    )


class _Unused(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("w", torch.ones(2, 2))

    def forward(self, x):
        return x + torch.full((2, 2), 1.0)


def test_a_stride_zero_weight_does_not_raise_the_reference_runs_memory_budget(tmp_path):
    n, full = 32768, 50000  # the weight "holds" 4 GiB; full() asks for 10 GB

    def config(doc):
        meta = doc["config"]["w"]["tensor_meta"]
        meta["sizes"] = [{"as_int": n}, {"as_int": n}]
        meta["strides"] = [{"as_int": 0}, {"as_int": 0}]

    def model(doc):
        graph = doc["graph_module"]["graph"]
        for node in graph["nodes"]:
            if node["target"].endswith("full.default"):
                node["inputs"][0]["arg"]["as_ints"] = [full, full]
        meta = graph["tensor_values"]["b_w"]
        meta["sizes"] = [{"as_int": n}, {"as_int": n}]
        meta["strides"] = [{"as_int": 0}, {"as_int": 0}]

    src = _save(_Unused(), (torch.randn(2, 2),), tmp_path / "plain.pt2")
    path = _edit(src, tmp_path / "attack.pt2", {
        "model_weights_config.json": config, "models/model.json": model,
    })
    proc = _run(
        f"""
        import sys
        from passlens.cli import main
        sys.exit(main(["explore", {str(path)!r}, "--check"]))
        """
    )
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}"
    out = proc.stdout + proc.stderr
    assert "reference run of the program needed more than" in out, out[-600:]
    assert "needed more than 4 GiB" in out, out[-600:]


class _Empty(torch.nn.Module):
    def forward(self, x):
        return x + torch.empty(32, 32)


def test_pt2_with_compiler_tvm_check_reference_zero_fills_empty(tmp_path):
    pytest.importorskip("tvm")
    path = _save(_Empty(), (torch.zeros(32, 32),), tmp_path / "empty.pt2")
    proc = _run(
        f"""
        import numpy as np, torch
        import explorer.check.runner as runner
        seen = []
        real = runner.torch_reference
        def spy(source, inputs):
            out = real(source, inputs)
            seen.append(np.asarray(out[0][0]))
            return out
        runner.torch_reference = spy
        junk = [torch.full((32, 32), 7.0e30) for _ in range(64)]
        del junk
        from passlens.cli import main
        main(["explore", {str(path)!r}, "--compiler", "tvm", "--check"])
        print("NONZERO", int((seen[0] != 0).sum()) if seen else "not run")
        """
    )
    # TVM runs the program itself, where passlens cannot fill what empty() allocates: the
    # program is refused up front (before any reference runs); a reference that did run
    # would have to hold zeros
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-600:]
    out = proc.stdout + proc.stderr
    refused = "refused to run opaque op aten.empty.memory_format" in out
    assert (refused and "NONZERO not run" in out) or "NONZERO 0" in out, out[-600:]
