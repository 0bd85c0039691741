"""A task's offline substitute data for every seed (evoflow.helmsman.run.make_data)."""

from evoflow.warmstart import handoff

handoff()

import sys
from pathlib import Path

from evoflow.helmsman.run import make_data
from evoflow.joblog import log_to

sys.stderr = open(snakemake.log[0], "w")
log_to(sys.stderr)
source = Path(snakemake.input[0]) if len(snakemake.input) else None
outputs = [Path(p) for p in snakemake.output]
make_data(snakemake.wildcards.task, list(snakemake.params.seeds), outputs, source)
