"""`compiler.build(module) -> Executable`: compile a module and run it on numpy arrays.

`build` runs the passes still needed (`default`, `legalize-ops`, `codegen`; each
recorded, see `Executable.result`) and turns each function of the legalized module into a
*plan*: a flat list of instructions (call a kernel, view, fill, tuple, call a function, if)
over value slots, which the executable interprets, dropping each value after its last use.
Weights are the module's named constants, passed to kernels by reference (never copied).

`executable.export(path)` writes one zip file (entries stored, not compressed): the plan and
the kernels' runtime description as JSON, each kernel's object code (`code/<kernel>.o`,
host machine code from LLVM) and each weight as a `.npy`; it returns the file's size in
bytes, which grows with the weights (docs/bugs.md bug 1: a weight duplicated by a broadcast
shows up here). `load(path)` loads such a file into a runnable Executable.
"""

from __future__ import annotations

import io
import json
import os
import time
import zipfile
from collections.abc import Sequence
from typing import Any

import numpy as np

from compiler.backend.codegen import JIT, host_target
from compiler.backend.kernels import module_kernels, opt_level_of
from compiler.backend.runtime import CompiledKernel, KernelInfo
from compiler.errors import PasslensError
from compiler.ir.nodes import (
    Call,
    Constant,
    Expr,
    FuncCall,
    Function,
    If,
    Loop,
    Module,
    Tuple,
    TupleGetItem,
)
from compiler.ir.parser import parse_dim
from compiler.ir.symbolic import SymExpr, evaluate_dim
from compiler.ir.types import DType, TensorType, TupleType, empty_scan_shape, shape_matches

FORMAT = "passlens-executable"
VERSION = 1


class BuildError(PasslensError):
    """The module cannot be turned into an executable; the message says which node and why."""


# ----- plans ------------------------------------------------------------------------------------


def _dim_json(d) -> Any:
    return d if isinstance(d, int) else str(d)


def _dim_from_json(d) -> Any:
    return d if isinstance(d, int) else parse_dim(d)


def _attr_json(v: Any) -> Any:
    if isinstance(v, DType):
        return {"dtype": v.name}
    if isinstance(v, SymExpr):
        return {"dim": str(v)}
    if isinstance(v, tuple):
        return [_attr_json(x) for x in v]
    return v


def _attr_from_json(v: Any) -> Any:
    if isinstance(v, dict):
        return DType.of(v["dtype"]) if "dtype" in v else parse_dim(v["dim"])
    if isinstance(v, list):
        return tuple(_attr_from_json(x) for x in v)
    return v


def _type_json(ty) -> Any:
    if isinstance(ty, TupleType):
        return {"tuple": [_type_json(f) for f in ty.fields]}
    return {
        "dtype": ty.dtype.name,
        "shape": None if ty.shape is None else [_dim_json(d) for d in ty.shape],
    }


def _type_from_json(j) -> Any:
    if "tuple" in j:
        return TupleType([_type_from_json(f) for f in j["tuple"]])
    shape = None if j["shape"] is None else [_dim_from_json(d) for d in j["shape"]]
    return TensorType(shape, j["dtype"])


def _frozen_copy(a: np.ndarray) -> np.ndarray:
    out = np.asarray(a, order="C")
    out.flags.writeable = False
    return out


class _PlanBuilder:
    """Turns a legalized function into instructions over value slots."""

    def __init__(self, module: Module, params: dict[str, np.ndarray]):
        self.module = module
        self.params = params  # weight name -> array (shared with the module)
        self.kernels: set[str] = set()
        self._anon: dict[int, str] = {}

    def ref(self, e: Expr, slots: dict[int, int]) -> dict:
        if isinstance(e, Constant):
            if e.name is not None:
                key = e.name
            elif id(e) in self._anon:
                key = self._anon[id(e)]
            else:
                key = self._anon[id(e)] = f"const.{len(self._anon)}"
            if key not in self.params:
                # kernels take row-major buffers: a weight folded from a transpose (a
                # column-major view) is copied once here rather than at every call
                self.params[key] = e.data if e.data.flags.c_contiguous else _frozen_copy(e.data)
            return {"w": key}
        if id(e) not in slots:
            raise BuildError(f"{e!r} is used before it is computed")
        return {"v": slots[id(e)]}

    def block(self, bindings: Sequence[Expr], result: Expr, slots: dict[int, int]) -> dict:
        instrs = []
        for b in bindings:
            slot = len(slots)
            instrs.append(self.instr(b, slots) | {"out": slot})
            slots[id(b)] = slot
        return {"instrs": instrs, "result": self.ref(result, slots)}

    def instr(self, b: Expr, slots: dict[int, int]) -> dict:
        # function-level: loading an executable (``load``) needs no passes
        from compiler.passes.legalize_ops import is_host_call, unlowered_reason

        where = f" (at {b.prov.describe()})" if not b.prov.is_empty else ""
        if isinstance(b, Call):
            args = [self.ref(a, slots) for a in b.args]
            if b.op == "call_lowered":
                self.kernels.add(b.attrs["kernel"])
                return {
                    "op": "kernel",
                    "kernel": b.attrs["kernel"],
                    "args": args,
                    "shape": [_dim_json(d) for d in b.attrs["shape"]],
                    "dims": [_dim_json(d) for d in b.attrs.get("dims") or ()],
                    "dim_names": [
                        n.strip() for n in (b.attrs.get("dim_names") or "").split(",") if n.strip()
                    ],
                }
            if b.op == "opaque":  # its framework runs it; its result checked against its type
                return {
                    "op": "host",
                    "name": b.op,
                    "args": args,
                    "attrs": {k: _attr_json(v) for k, v in b.attrs.items()},
                    "type": _type_json(b.ty),
                }
            if is_host_call(b):
                if not isinstance(b.ty, TensorType) or b.ty.shape is None:
                    raise BuildError(f"{b.op}{where}: its result needs a known rank")
                return {
                    "op": "host",
                    "name": b.op,
                    "args": args,
                    "attrs": {k: _attr_json(v) for k, v in b.attrs.items()},
                    "shape": [_dim_json(d) for d in b.ty.shape],
                }
            reason = unlowered_reason(self.module, b)
            raise BuildError(
                f"op {b.op}{where} is not lowered"
                + (f": {reason}" if reason else ": run legalize-ops before building")
            )
        if isinstance(b, Tuple):
            return {"op": "tuple", "args": [self.ref(f, slots) for f in b.fields]}
        if isinstance(b, TupleGetItem):
            return {"op": "item", "arg": self.ref(b.tuple_value, slots), "index": b.index}
        if isinstance(b, Loop):
            return {
                "op": "loop",
                "func": b.func,
                "args": [self.ref(a, slots) for a in b.args],
                "carried": b.num_carried,
                "scan_dtypes": [f.dtype.short for f in b.ty.fields[b.num_carried :]],
            }
        if isinstance(b, FuncCall):
            return {"op": "call", "func": b.func, "args": [self.ref(a, slots) for a in b.args]}
        if isinstance(b, If):
            cond = self.ref(b.cond, slots)
            return {
                "op": "if",
                "cond": cond,
                "then": self.block(b.then_branch.bindings, b.then_branch.result, dict(slots)),
                "else": self.block(b.else_branch.bindings, b.else_branch.result, dict(slots)),
            }
        raise BuildError(f"cannot run a {type(b).__name__}{where}")

    def function(self, fn: Function) -> dict:
        slots = {id(p): k for k, p in enumerate(fn.params)}
        body = self.block(fn.bindings, fn.output, slots)
        _add_frees(body, set(range(len(fn.params))))
        return {
            "params": [{"name": p.name, "type": _type_json(p.ty)} for p in fn.params],
            "num_input": fn.num_input,
            "output_is_tuple": isinstance(fn.output.ty, TupleType),
            "ret": (
                [_type_json(f) for f in fn.output.ty.fields]
                if isinstance(fn.output.ty, TupleType)
                else [_type_json(fn.output.ty)]
            ),
            **body,
        }


def _reads(instr: dict) -> list[int]:
    refs = []
    for key in ("args",):
        refs += instr.get(key, [])
    for key in ("arg", "cond"):
        if key in instr:
            refs.append(instr[key])
    out = [r["v"] for r in refs if "v" in r]
    for branch in ("then", "else"):
        if branch in instr:
            blk = instr[branch]
            for i in blk["instrs"]:
                out += _reads(i)
            if "v" in blk["result"]:
                out.append(blk["result"]["v"])
    return out


def _add_frees(block: dict, keep: set[int]) -> None:
    """Mark, on each instruction, the values read for the last time there (to drop them)."""
    last: dict[int, int] = {}
    for k, ins in enumerate(block["instrs"]):
        for v in _reads(ins):
            last[v] = k
    result = block["result"].get("v")
    for k, ins in enumerate(block["instrs"]):
        ins["free"] = sorted(
            v for v, at in last.items() if at == k and v != result and v not in keep
        )
        for branch in ("then", "else"):
            if branch in ins:
                _add_frees(ins[branch], keep | set(last))


# ----- the executable ----------------------------------------------------------------------------


def _fits(ty, value: Any, env: dict[str, int]) -> bool:
    """Whether a value a host op gave has type `ty` (binding the symbols it names)."""
    if isinstance(ty, TupleType):
        return (
            isinstance(value, tuple)
            and len(value) == len(ty.fields)
            and all(_fits(t, v, env) for t, v in zip(ty.fields, value, strict=True))
        )
    return (
        isinstance(value, np.ndarray)
        and value.dtype == ty.dtype.numpy
        and shape_matches(ty.shape, value.shape, env)
    )


def _resolve_dims(value: Any, env: dict[str, int]) -> Any:
    """An attribute with its symbolic dims (alone or in a list, e.g. `shape=[b, n]`) given
    their values."""
    if isinstance(value, SymExpr):
        return evaluate_dim(value, env)
    if isinstance(value, (list, tuple)):
        return type(value)(_resolve_dims(v, env) for v in value)
    return value


class Executable:
    """A compiled module: call it on numpy arrays (`executable(*inputs)` -> tuple of
    outputs, like `compiler.interpret.run`), `export(path)` it to one file."""

    def __init__(
        self,
        plans: dict[str, dict],
        objects: dict[str, bytes],
        infos: dict[str, KernelInfo],
        params: dict[str, np.ndarray],
        module: Module | None = None,
        result: Any = None,
        seconds: float = 0.0,
    ):
        self.plans = plans
        # the executable's own machine code: each kernel's object code loaded into an engine
        # of its own, so no other executable shares it and it is freed with this one
        self._objects = objects
        self._jit = JIT()
        for code in objects.values():
            self._jit.add_object(code)
        self.kernels: dict[str, CompiledKernel] = {
            name: CompiledKernel(infos[name], self._jit.address, self._jit) for name in objects
        }
        self.params = params
        self.module = module
        self.result = result  # the PassResult of the passes build ran (None when loaded)
        self.build_seconds = seconds

    def __repr__(self) -> str:
        return (
            f"<Executable {', '.join('@' + n for n in self.plans)}: {len(self.kernels)} kernels, "
            f"{self.param_bytes / 1e6:.1f} MB of weights>"
        )

    @property
    def param_bytes(self) -> int:
        """Bytes of the weights the executable holds."""
        return sum(int(a.nbytes) for a in self.params.values())

    @property
    def libraries(self) -> list[str]:
        """Library routines any kernel calls."""
        out = []
        for k in self.kernels.values():
            for s in k.info.steps:
                routine = getattr(getattr(s, "call", None), "routine", None)
                if routine and routine not in out:
                    out.append(routine)
        return out

    def __call__(self, *inputs: Any, function: str = "main") -> tuple:
        return self.run(*inputs, function=function)

    def run(self, *inputs: Any, function: str = "main") -> tuple:
        """Run `function` on numpy (or torch CPU) arrays; returns a tuple of arrays."""
        if function not in self.plans:
            raise KeyError(
                f"the executable has no function @{function} (has {', '.join(self.plans)})"
            )
        plan = self.plans[function]
        params = plan["params"]
        if len(inputs) != len(params):
            sig = ", ".join(f"%{p['name']}" for p in params)
            raise TypeError(f"@{function} takes {len(params)} input(s) ({sig}), got {len(inputs)}")
        values: dict[int, Any] = {}
        env: dict[str, int] = {}
        for k, (p, v) in enumerate(zip(params, inputs, strict=False)):
            if hasattr(v, "detach") and hasattr(v, "numpy"):
                v = v.detach().cpu().numpy()
            ty = p["_type"] if "_type" in p else p.setdefault("_type", _type_from_json(p["type"]))
            if isinstance(ty, TensorType):
                v = np.asarray(v)
                if v.dtype != ty.dtype.numpy or not shape_matches(ty.shape, v.shape, env):
                    raise TypeError(
                        f"input {k} (%{p['name']}) of @{function} expects {ty}, got {v.dtype} "
                        f"array of shape {v.shape}"
                    )
            values[k] = v
        out = self._block(plan, values, env)
        return tuple(out) if plan["output_is_tuple"] else (out,)

    def _value(self, ref: dict, values: dict) -> Any:
        return self.params[ref["w"]] if "w" in ref else values[ref["v"]]

    def _block(self, block: dict, values: dict, env: dict[str, int]) -> Any:
        for ins in block["instrs"]:
            values[ins["out"]] = self._instr(ins, values, env)
            for v in ins["free"]:
                values.pop(v, None)
        return self._value(block["result"], values)

    def _shape(self, dims: list, env: dict[str, int]) -> tuple[int, ...]:
        return tuple(d if isinstance(d, int) else evaluate_dim(parse_dim(d), env) for d in dims)

    def _instr(self, ins: dict, values: dict, env: dict[str, int]) -> Any:
        op = ins["op"]
        if op == "kernel":
            args = [self._value(a, values) for a in ins["args"]]
            kernel = self.kernels[ins["kernel"]]
            names = ins.get("dim_names") or []
            known = dict(zip(names, self._shape(ins.get("dims") or [], env), strict=True))
            try:
                out_shape = self._shape(ins["shape"], env)
            except KeyError:  # a symbol the inputs did not bind: the kernel finds it
                out_shape = None
            return kernel.run(args, out_shape=out_shape, env=known)
        if op == "host":
            args = [self._value(a, values) for a in ins["args"]]
            if ins["name"] in ("reshape", "flatten", "squeeze", "unsqueeze") and (
                "?" not in ins["shape"]  # a reshape to a computed shape: the op computes it
            ):
                return np.reshape(args[0], self._shape(ins["shape"], env))
            if ins["name"] == "match_shape":  # binds the symbols its type names
                dims = [_dim_from_json(d) for d in ins["shape"]]
                value = np.asarray(args[0])
                if not shape_matches(tuple(dims), value.shape, env):
                    raise BuildError(
                        f"match_shape: a value of shape {value.shape} does not fit "
                        f"{[str(d) for d in dims]}"
                    )
                return value
            from compiler.ir.op_registry import get_op

            attrs = {k: _attr_from_json(v) for k, v in ins["attrs"].items()}
            attrs = {k: _resolve_dims(v, env) for k, v in attrs.items()}
            opdef = get_op(ins["name"])
            out = opdef.compute(args, opdef.normalize_attrs(attrs))
            if ins["name"] == "opaque":
                out = tuple(out) if isinstance(out, list) else out
                ty = _type_from_json(ins["type"])
                if not _fits(ty, out, env):
                    raise BuildError(
                        f"opaque op {attrs.get('target')} gave a value that is not of its "
                        f"recorded type {ty}"
                    )
            return out
        if op == "tuple":
            return tuple(self._value(a, values) for a in ins["args"])
        if op == "item":
            return self._value(ins["arg"], values)[ins["index"]]
        if op == "call":
            args = [self._value(a, values) for a in ins["args"]]
            out = self.run(*args, function=ins["func"])
            return out if self.plans[ins["func"]]["output_is_tuple"] else out[0]
        if op == "loop":
            return self._loop(ins, [self._value(a, values) for a in ins["args"]])
        if op == "if":
            cond = np.asarray(self._value(ins["cond"], values))
            branch = ins["then"] if bool(cond.reshape(())) else ins["else"]
            return self._block(branch, dict(values), env)
        raise BuildError(f"unknown instruction {op!r}")

    def _loop(self, ins: dict, args: list) -> tuple:
        """A Loop (see compiler.ir.nodes.Loop): the body's plan once per iteration."""
        from compiler.interpret import MAX_LOOP_ITERATIONS

        func, k = ins["func"], ins["carried"]
        body = self.plans[func]
        it_ty = body["params"][0].get("_type") or _type_from_json(body["params"][0]["type"])
        max_trips = int(np.asarray(args[0]).reshape(()))
        cond = bool(np.asarray(args[1]).reshape(()))
        carried, captured = list(args[2 : 2 + k]), args[2 + k :]
        scans: list[list] = [[] for _ in ins["scan_dtypes"]]
        i = 0
        while i < max_trips and cond:
            if i >= MAX_LOOP_ITERATIONS:
                raise BuildError(
                    f"loop @{func} ran {MAX_LOOP_ITERATIONS} iterations without ending"
                )
            out = self.run(
                np.asarray(i, it_ty.dtype.numpy),
                np.asarray(cond),
                *carried,
                *captured,
                function=func,
            )
            cond = bool(np.asarray(out[0]).reshape(()))
            carried = list(out[1 : 1 + k])
            for j, s in enumerate(scans):
                s.append(np.asarray(out[1 + k + j]))
            i += 1
        stacked = []
        for j, s in enumerate(scans):
            if not s:  # no iteration: an empty stack of the per-iteration shape
                types = body.setdefault(
                    "_param_types", [_type_from_json(p["type"]) for p in body["params"]]
                )
                per = _type_from_json(body["ret"][1 + k + j]) if "ret" in body else None
                shape = empty_scan_shape(types[2:], [*carried, *captured], per)
                if shape is None:
                    raise BuildError(
                        f"loop @{func} ran no iteration and its scanned output {j} has no "
                        "known per-iteration shape"
                    )
                stacked.append(np.zeros((0, *shape), dtype=DType(ins["scan_dtypes"][j]).numpy))
                continue
            stacked.append(np.stack(s))
        return (*carried, *stacked)

    # ----- export and load ---------------------------------------------------------------------
    def export(self, path: str | os.PathLike) -> int:
        """Write the executable to one file (plan, object code, weights); returns its size."""
        infos = {name: k.info.to_json() for name, k in self.kernels.items()}
        names = list(self.params)
        plan = {
            "format": FORMAT,
            "version": VERSION,
            "target": host_target().describe(),
            "functions": {n: _strip(p) for n, p in self.plans.items()},
            "kernels": infos,
            "params": {name: f"params/{k}.npy" for k, name in enumerate(names)},
        }
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as z:
            z.writestr("plan.json", json.dumps(plan, indent=1))
            for name, code in self._objects.items():
                z.writestr(f"code/{name}.o", code)
            for k, name in enumerate(names):
                with z.open(f"params/{k}.npy", "w", force_zip64=True) as f:
                    np.save(f, np.asarray(self.params[name], order="C"), allow_pickle=False)
        return os.path.getsize(path)


def _strip(plan: dict) -> dict:
    out = {k: v for k, v in plan.items() if not k.startswith("_")}
    out["params"] = [{k: v for k, v in p.items() if k != "_type"} for p in plan["params"]]
    return out


def load(path: str | os.PathLike) -> Executable:
    """An executable from a file written by `Executable.export`."""
    with zipfile.ZipFile(path) as z:
        plan = json.loads(z.read("plan.json"))
        if plan.get("format") != FORMAT:
            raise BuildError(f"{path} is not a passlens executable")
        if plan.get("version") != VERSION:
            raise BuildError(f"{path} has format version {plan.get('version')}, this is {VERSION}")
        target = host_target().describe()
        if plan["target"] != target:
            raise BuildError(f"{path} was built for {plan['target']}, this machine is {target}")
        objects = {name: z.read(f"code/{name}.o") for name in plan["kernels"]}
        infos = {name: KernelInfo.from_json(j) for name, j in plan["kernels"].items()}
        params = {}
        for name, member in plan["params"].items():
            arr = np.load(io.BytesIO(z.read(member)), allow_pickle=False)
            arr.flags.writeable = False
            params[name] = arr
    return Executable(plan["functions"], objects, infos, params)


# ----- build -------------------------------------------------------------------------------------


def _stage(module: Module) -> str:
    """How far a module is: `graph`, `fused`, `loops` or `compiled`."""
    backend = str(module.attrs.get("backend", ""))
    if backend.startswith("llvm"):
        return "compiled"
    if backend == "loops":
        return "loops"
    if any(fn.attrs.get("primitive", False) for fn in module.functions.values()):
        return "fused"
    return "graph"


_PIPELINES = {
    "graph": "default,legalize-ops,codegen",
    "fused": "legalize-ops,codegen",
    "loops": "codegen",
    "compiled": "",
}


def build(module: Module, pipeline: str | None = None, record: bool = True) -> Executable:
    """Compile `module` into an Executable.

    `pipeline`: the passes to run first (a spec); by default what the module still needs:
    `default,legalize-ops,codegen` for a graph module, less when it is further along.
    The recorded run is `executable.result` (its snapshots show every stage).
    """
    from compiler import passes

    start = time.perf_counter()
    spec = _PIPELINES[_stage(module)] if pipeline is None else pipeline
    result = None
    if spec:
        result = passes.run(module, spec, record=record, raise_on_failure=True)
        module = result.module
    if _stage(module) != "compiled":
        raise BuildError(
            f"after the passes {spec!r} the module is at stage {_stage(module)!r}, not compiled: "
            "end the pipeline with legalize-ops,codegen"
        )
    params: dict[str, np.ndarray] = {}
    builder = _PlanBuilder(module, params)
    plans = {
        name: builder.function(fn)
        for name, fn in module.functions.items()
        if not fn.attrs.get("primitive", False)
    }
    held = module_kernels(module)
    try:
        level = opt_level_of(module)  # the code codegen made (and checked), not another
        compiled = {name: held.compiled(name, level) for name in sorted(builder.kernels)}
    except KeyError as e:  # KernelNotFound: a module parsed or loaded without its kernels
        raise BuildError(str(e)) from None
    return Executable(
        plans,
        {name: c.object_code for name, c in compiled.items()},
        {name: c.info for name, c in compiled.items()},
        params,
        module,
        result,
        time.perf_counter() - start,
    )


__all__ = ["BuildError", "Executable", "build", "load"]
