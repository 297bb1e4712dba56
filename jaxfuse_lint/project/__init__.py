"""Analyse across modules: the project index, each module's summary, and the external map the
fixpoint gives each file."""
