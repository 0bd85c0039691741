"""Reports: Table 1 (Markdown, CSV, LaTeX) and figures, from cached metrics."""
