"""Deliberately faulty replicas of real compiler bugs (see docs/bugs.md; "docs/bugs.md bug N" in
a replica's docstring is bug N there).

Each module here copies the faulty behaviour of one real pass, says in its docstring which
bug it copies, and registers under a name starting with `replica-`. None is ever part of a
named pipeline: they exist so notebooks can show, and tests can check, that the explorer
finds what went wrong. This is a pass package (compiler/passes/infra/library.py imports every
module in it, as it does those of compiler/passes/).
"""
