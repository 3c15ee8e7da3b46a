"""Save and load time and file size of the ConvNeXt-base default-pipeline trace.

    .venv/bin/python bench/trace_io.py

Goal: the file is at most 1.1x the bytes of the model's weights.
"""

from __future__ import annotations

import os
import platform
import shlex
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main() -> int:
    print("Command:", shlex.join([".venv/bin/python", *sys.argv]))
    print(f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
          f"{time.strftime('%Y-%m-%d %H:%M')}")
    import explorer
    from compiler import models

    module = models.convnext()
    trace = explorer.explore(module)
    weights = trace.imported.param_bytes
    print(f"trace: {len(trace)} steps, weights {weights / 1e6:.1f} MB")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "convnext.passlens")
        start = time.perf_counter()
        trace.save(path)
        save_s = time.perf_counter() - start
        size = os.path.getsize(path)
        start = time.perf_counter()
        loaded = explorer.load(path)
        load_s = time.perf_counter() - start
    ratio = size / weights
    print(f"save {save_s:.2f} s, load {load_s:.2f} s, file {size / 1e6:.1f} MB = {ratio:.4f}x the "
          f"weights (goal <= 1.1x: {'ok' if ratio <= 1.1 else 'OVER'}); {len(loaded)} steps loaded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
