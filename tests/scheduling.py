"""How ``make test`` spreads the suite over CPU cores (pytest-xdist).

Tests are handed to the workers one at a time, in collection order, except that
the tests of one *unit* go to one worker together: tests that share an expensive
module- or session-scoped fixture (a Slurm cluster, a finished tiny run) would
otherwise build it once per worker. ``UNITS`` names them by file; a file not
listed is split test by test.

A worker is given its next unit only when it is down to the test it is running,
so no long test waits in one worker's queue while the other worker runs dry.
"""

from __future__ import annotations

UNITS = {
    # session fixtures shared across files
    "tests/slurm/test_slurm_dag.py": "slurm cluster",
    "tests/slurm/test_slurm_resume.py": "slurm cluster",
    "tests/workflow/test_fedse_dag.py": "tiny run",
    "tests/workflow/test_explorer_ui.py": "tiny run",
    # module fixtures that run a workflow or a federation
    "tests/federate/test_deployment.py": "federate deployment",
    "tests/federate/test_tls.py": "federate tls",
    "tests/workflow/test_agentevol_dag.py": "agentevol run",
    "tests/workflow/test_fed_options_dag.py": "fed options run",
    "tests/workflow/test_fedrl_dag.py": "fedrl run",
    "tests/workflow/test_helmsman_dag.py": "helmsman run",
    "tests/workflow/test_rl_dag.py": "rl run",
    "tests/workflow/test_sage_dag.py": "sage run",
    # one vLLM engine (and its environment's set-up) for the whole file
    "tests/policy/test_vllm_backend.py": "vllm engine",
}


def unit_of(nodeid: str) -> str:
    """The work unit of a test: its file's entry in ``UNITS``, else the test."""
    return UNITS.get(nodeid.split("::", 1)[0], nodeid)


def make_scheduler(config, log):
    """A pytest-xdist scheduler over ``UNITS`` (imported only under xdist)."""
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):
        def __init__(self, config, log=None) -> None:
            super().__init__(config, log)
            config.option.loadscopereorder = False  # keep collection order

        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

        def _reschedule(self, node) -> None:
            if node.shutting_down:
                return
            if not self.workqueue:
                node.shutdown()
                return
            # the worker holds back one test to know what comes next
            if self._pending_of(self.assigned_work[node]) <= 1:
                self._assign_work_unit(node)

    return UnitScheduling(config, log)
