"""The iree-compile flags a user may add to a recording (`explore(..., compiler="iree",
flags=[...])`, `passlens explore --flag`): untrusted text, checked here, in one place for
the API and the command.

A flag is one `--name` or `--name=value` text (no newline, NUL or other control
character; at most `MAX_FLAG_CHARS` characters, `MAX_FLAGS` of them). Its name is
an `--iree-...` option (or one of `OTHER_NAMES`); iree-compile itself says which
names it does not know. Refused, because the flag would write a file, read one, load a library
or run a program (IREE has options for all four), or would undo what the recording sets:

- a name (or a word of its value: a pass pipeline names passes and their options) with
  `dump`, `path`, `file`, `dir`, `output`, `library`, `plugin`, `linker`,
  `substitute`, `view` and the like (`REFUSED_WORDS`): `--iree-hal-dump-executable-
  files-to`, `--iree-llvmcpu-embedded-linker-path`, `--iree-load-plugin`,
  `--iree-hal-preprocess-executables-with` (runs a command), the parameter archive options
  (`--iree-parameter-export`, `--iree-opt-splat-parameters`, ...), a pipeline holding
  `iree-util-dump-module{path=...}` or `view-op-graph`;
- what the recording sets (`RECORDING_NAMES`): the phase to compile to is `pipeline`,
  the target is llvm-cpu on this machine (`--iree-hal-target-device`, the backends, the
  triple), and every `--mlir-print-*` option;
- any other option of iree-compile's: the LLVM and MLIR options it takes include ones that
  write files (`-o`, `--mlir-print-ir-tree-dir`, `--pass-remarks-output`).
"""

from __future__ import annotations

import re
from typing import Any

from explorer.iree.convert import IREEError

MAX_FLAGS = 64
MAX_FLAG_CHARS = 2000
#: options outside ``--iree-`` a recording may take: they only change how a dump prints
OTHER_NAMES = frozenset(
    {
        "mlir-elide-elementsattrs-if-larger",
        "mlir-elide-resource-strings-if-larger",
        "mlir-print-local-scope",
    }
)
#: options the recording sets itself (pipeline=, target=) or needs as they are
RECORDING_NAMES = frozenset(
    {
        "compile-to",
        "compile-from",
        "compile-mode",
        "iree-hal-target-device",
        "iree-hal-target-backends",
        "iree-hal-local-target-device-backends",
        "iree-hal-local-host-device-backends",
        "iree-hal-default-device",
        "iree-consteval-jit-target-device",
        "iree-llvmcpu-target-triple",
    }
)
#: a word of a flag's name, or of its value, that refuses it: files, libraries, programs
REFUSED_WORDS = (
    "dump",
    "path",
    "paths",
    "file",
    "files",
    "filename",
    "dir",
    "output",
    "library",
    "plugin",
    "linker",
    "link-embedded",
    "link-static",
    "link-bitcode",
    "substitute",
    "preprocess-executables",
    "ptxas",
    "keep",
    "view",
    "parameter-export",
    "parameter-import",
    "parameter-splat",
    "export-parameters",
    "import-parameters",
    "splat-parameters",
    "parameter-encoder",
    "reproducer",
    "spec-path",
    "spec-filename",
    "search",
    "listing",
)
_FORM = re.compile(r"--(?P<name>[a-z0-9][a-z0-9._-]*)(?P<eq>=(?P<value>.*))?", re.S)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# a refused word as a whole segment of a dashed name (``dump`` in ``iree-hal-dump-executable-
# files-to``; not ``file`` in ``profile``)
_REFUSED = re.compile(
    r"(?:^|[-_.])(?:" + "|".join(re.escape(w) for w in REFUSED_WORDS) + r")(?=$|[-_.])"
)
_WORD = re.compile(r"[a-z0-9][a-z0-9_.-]*")


def refused_word(text: str) -> str | None:
    """The refused word `text` (a flag's name, or a word of its value) holds, if any."""
    m = _REFUSED.search(text.lower())
    return m.group().strip("-_.") if m else None


def check_flags(flags: Any) -> list[str]:
    """`flags` (one text or a list of texts) as a list when every one may go to
    iree-compile, else one `explorer.iree.convert.IREEError` naming the first that
    may not and why."""
    extra = [flags] if isinstance(flags, str) else list(flags or ())
    if len(extra) > MAX_FLAGS:
        raise IREEError(f"{len(extra)} iree-compile flags, more than {MAX_FLAGS}")
    for flag in extra:
        why = _refusal(flag)
        if why:
            shown = repr(flag)[:120] if isinstance(flag, str) else type(flag).__name__
            raise IREEError(f"iree-compile flag {shown} refused: {why}")
    return extra


def _refusal(flag: Any) -> str:
    if not isinstance(flag, str):
        return "a flag is a '--name' or '--name=value' text"
    if len(flag) > MAX_FLAG_CHARS:
        return f"{len(flag):,} characters, over {MAX_FLAG_CHARS:,}"
    if _CONTROL.search(flag):
        return "it holds a newline or another control character"
    m = _FORM.fullmatch(flag)
    if m is None:
        return "a flag is one '--name' or '--name=value' text (lower-case name, two dashes)"
    name, value = m.group("name"), m.group("value") or ""
    if name in RECORDING_NAMES or name.startswith("mlir-print-ir"):
        return (
            "the recording sets it (the phase is pipeline=, the target llvm-cpu on this "
            "machine, the printing passlens's own)"
        )
    if not name.startswith("iree-") and name not in OTHER_NAMES:
        return (
            "only --iree-... options (and --" + ", --".join(sorted(OTHER_NAMES)) + ") are "
            "passed on: iree-compile's other options include ones that write files"
        )
    word = refused_word(name)
    if word is None and name.endswith(("-to", "-from", "-with")):  # a path or a command
        word = name.rsplit("-", 1)[1]
    if word is None:
        word = next(filter(None, map(refused_word, _WORD.findall(value.lower()))), None)
        where = "its value names"
    else:
        where = "its name has"
    if word is not None:
        return (
            f"{where} {word!r}: a flag that writes or reads a file, loads a library or runs a "
            "program is not passed on (explorer.iree.flags)"
        )
    return ""


__all__ = [
    "MAX_FLAGS",
    "MAX_FLAG_CHARS",
    "OTHER_NAMES",
    "RECORDING_NAMES",
    "REFUSED_WORDS",
    "check_flags",
    "refused_word",
]
