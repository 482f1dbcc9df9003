"""Rendering: how numbers, settings, tables and plots look, with no study logic of their own.

- ``numbers``: the number format, units, a value with its interval;
- ``settings``: which axes a row label names, and the words for their values;
- ``table``: a ``Table`` of text cells rendered as Markdown, LaTeX (booktabs) and HTML;
- ``plot``: the figure style, widths, notes for figures not drawn, saving; and, named there
  too, its parts: ``axes`` (value axes, ratio lines), ``bars`` (bars with intervals and runs),
  ``legend``.
"""
