"""Phase 2: from an approved plan to a codebase.

The Supervisor splits the plan into one spec per module; Coders then write
the modules in dependency order — task and strategy first, client and server
once those exist (each Coder sees the modules it builds on), the entry point
last. A reply that cannot be used leaves its module out and says so in the
notes; the repair loop's first diagnosis then names the missing module.
"""

from __future__ import annotations

from evoflow.helmsman import agents
from evoflow.helmsman.agents import ReplyError
from evoflow.helmsman.llm import AgentLLM

ORDER = (("task.py", "strategy.py"), ("client_app.py", "server_app.py"), ("run.py",))
NEEDS = {
    "task.py": (),
    "strategy.py": (),
    "client_app.py": ("task.py",),
    "server_app.py": ("task.py", "strategy.py"),
    "run.py": ("client_app.py", "server_app.py"),
}
DEFAULT_SPEC = "what the contract above says this module holds"


def write_codebase(
    plan: str, llm: AgentLLM
) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """(modules, blueprint, notes) for ``plan``."""
    notes = []
    try:
        blueprint = agents.parse_blueprint(
            llm.ask("supervisor", agents.supervisor(plan))
        )
    except ReplyError as error:
        notes.append(f"supervisor: {error}; each coder works from the contract alone")
        blueprint = {name: DEFAULT_SPEC for stage in ORDER for name in stage}
    modules: dict[str, str] = {}
    for stage in ORDER:
        for name in stage:
            written = {need: modules[need] for need in NEEDS[name] if need in modules}
            chat = agents.coder(name, plan, blueprint[name], written)
            try:
                modules[name] = agents.parse_module(llm.ask(f"coder:{name}", chat))
            except ReplyError as error:
                notes.append(f"coder of {name}: {error}; the module is left out")
    return modules, blueprint, notes
