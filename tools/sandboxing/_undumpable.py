"""Imported by the forkserver first (`tools.sandboxing.sandbox.PRELOAD_MODULES`): the forkserver, and so
every job it forks from the job's first instruction, is not dumpable (`tools.sandboxing.isolation`). A
dumpable forkserver would let a candidate's job of the same user ptrace it, and through it
every judge forked after.
"""

from tools.sandboxing.isolation import make_undumpable

make_undumpable()
