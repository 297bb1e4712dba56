"""Parse: source text -> what libcst reads (notebook cells joined, IPython syntax masked), incremental
re-parsing for the editor, and positions for reported nodes."""
