"""How log lines look: every line of a job's log, and of ``evoflow``, starts with
its time.

The workflow's scripts send their ``logging`` records (and tqdm's bars) to the
job's log file; ``tail -f`` on it, or ``evoflow status``, shows where a job is.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
DATE_FORMAT = "%Y-%m-%d %H:%M:%S"


def log_to(stream: TextIO = sys.stderr, level: int = logging.INFO) -> None:
    """Send ``logging`` records to ``stream``, each line stamped with its time.

    Parameters
    ----------
    stream
        where the lines go; a job's script passes its log file (``sys.stderr``
        reopened on ``snakemake.log[0]``).
    level
        the lowest level written.
    """
    logging.basicConfig(level=level, stream=stream, format=LOG_FORMAT,
                        datefmt=DATE_FORMAT, force=True)  # fmt: skip
