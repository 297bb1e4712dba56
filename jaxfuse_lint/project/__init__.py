"""Analyse across modules: the project index, each module's summary, and the external map the
fixpoint gives each file.

A function defined in one module and jitted, vmapped or used as a loop body in another runs
under tracing too; the per-file model sees only its own module. The cross-module facts come
in three layers:

1. prescan.py: text only, no parse: each file's imports (the module graph) and re-exports
   (module names: module_names.py).
2. summary.py: from the parse the main pass needs anyway, what a module traces in other
   modules; it depends on the file's text alone, so it is cached with the file.
3. index.py: `ProjectIndex`, the least fixpoint over all summaries, built incrementally as
   summaries arrive; `external(i)` is the map file i's model seeds. import_graph.py orders
   the analysis (importers first).

Layers 1 and 3 need no parse: libcst and the model are imported by the summarizer (layer 2)
only when it runs, so that a run whose files all come from the cache never loads them.
"""
