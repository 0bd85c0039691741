"""Following a run: what Snakemake has done, what is running, how long is left."""
