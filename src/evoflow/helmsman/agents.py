"""What each Helmsman agent is asked, and how its reply is read.

Agents: the Planner drafts a research plan; the Reflector judges it complete
or not; the Supervisor splits an approved plan into module specs; Coders write
one module each; the Debugger repairs a codebase from a diagnosis; the
optional Judge reviews a run that passed the deterministic checks. Every
reply is parsed here, and a reply that cannot be used raises ``ReplyError``
with one sentence saying what is missing (the caller records it and, in the
repair loop, spends an attempt on it).
"""

from __future__ import annotations

import json
import re

from evoflow.errors import EvoflowError
from evoflow.helmsman.codebase import MODULES

PLAN_SECTIONS = ("Summary", "Challenges", "Tasks", "Technical Setup")
PY_NAME = re.compile(r"([\w.-]+)\.py\b")
HEADER = re.compile(r"\A\s*#\s*file\s*:\s*`?([\w./-]+\.py)`?[ \t]*\n", re.IGNORECASE)

CONTRACT = """\
The codebase runs offline in a sandbox (no network, no files outside its folder) as five
modules: task.py (data loading, model, local training and `predict`), strategy.py
(`build_strategy(config)` returning a Flower strategy), client_app.py (a
`flwr.clientapp.ClientApp` named `app`), server_app.py (a `flwr.serverapp.ServerApp`
named `app`) and run.py (the entry point). Available: Python 3.11, numpy and flwr 1.42
(Message API: flwr.app, flwr.clientapp, flwr.serverapp, flwr.serverapp.strategy);
there is no Ray, so run.py must read run_config.json and call
`flower_runtime.run_federation(server_app, client_app, num_nodes=config["clients"],
run_config=config)`. Node k sees context.node_config["partition-id"] == k.
data.npz holds x_train_<k>, y_train_<k> and x_test_<k> per client k (float32 features,
int64 labels; labeled_<k> masks and task_ids_<k> where the task has them), the global
x_test, task_test where tasks arrive in sequence (each global test row's task, known at
test time) and a JSON string meta (num_classes and the task's settings). The test labels
are not there: the benchmark keeps them and scores what the code predicts.
run_config.json holds clients, rounds, seed, lr, local_epochs, batch, hidden, fraction
(the share of clients that train each round), proximal_mu, distill, continual and watch.
task.py defines `predict(weights, x)`: the class (int64) the model with these arrays
gives each row of x. Before the first round and after every round the server predicts
the global test rows with the global model; at the end it writes predictions.npz
(np.savez) with global_<r> for every round r = 0..rounds, and model.npz as
np.savez("model.npz", *final_global_weights), which predict must read back into the
last round's predictions. When watch is "client_accuracy", each client k's own model
also predicts its local test rows: clients_<r>_<k> (r = 0 is the initial global model).
When a client keeps one model per task (continual), it may add tasks_<r>_<k>: every
global test row predicted by the model of that row's task. Every array holds one class
index per row."""


class ReplyError(EvoflowError):
    """An agent's reply cannot be used."""


def planner(query: str, feedback: str | None = None) -> list[dict]:
    """Ask for a research plan; ``feedback`` is the reflection's or the human's."""
    sections = ", ".join(f"## {s}" for s in PLAN_SECTIONS)
    text = (f"A researcher asks for a federated-learning system:\n\n{query}\n\n"
            f"Write a research plan in Markdown with the sections {sections}. Name the "
            "federated algorithm, the model, how the data is split over the clients, the "
            "number of clients and rounds, and the metric.")  # fmt: skip
    if feedback:
        text += f"\n\nRevise your previous plan. Feedback:\n{feedback}"
    return [{"role": "user", "content": text}]


def parse_plan(reply: str) -> str:
    missing = [
        s for s in PLAN_SECTIONS if not re.search(rf"^#+\s*{s}\b", reply, re.M | re.I)
    ]
    if missing:
        raise ReplyError(f"the plan lacks the section(s) {', '.join(missing)}")
    return reply.strip()


def reflector(query: str, plan: str) -> list[dict]:
    text = (f"Query:\n{query}\n\nPlan:\n{plan}\n\nJudge whether the plan is coherent, "
            "complete (data split, model, algorithm, clients, rounds, metric) and feasible. "
            "Answer on the first line COMPLETE or INCOMPLETE; after INCOMPLETE, list what is "
            "missing, one item per line.")  # fmt: skip
    return [{"role": "user", "content": text}]


def _verdict(reply: str, yes: str, no: str, what: str) -> tuple[bool, str]:
    """A reply whose first line starts with ``yes`` or ``no``: (yes?, the
    rest — after ``no``, what follows a colon on the first line too)."""
    first, _, rest = reply.strip().partition("\n")
    word = first.strip().strip("*:# ").upper()
    if word.startswith(no):
        return False, (first.partition(":")[2] + "\n" + rest).strip()
    if word.startswith(yes):
        return True, rest.strip()
    raise ReplyError(f"the {what} does not start with {yes} or {no}")


def _listing(modules: dict[str, str]) -> str:
    """Modules shown to an agent, each in a fenced block under its name."""
    return "\n\n".join(
        f"{name}:\n```python\n{code}```" for name, code in modules.items()
    )


def parse_reflection(reply: str) -> tuple[bool, str]:
    """(complete, feedback)."""
    return _verdict(reply, "COMPLETE", "INCOMPLETE", "reflection")


def supervisor(plan: str) -> list[dict]:
    keys = ", ".join(f'"{m}"' for m in MODULES)
    text = (f"Approved plan:\n{plan}\n\n{CONTRACT}\n\nSplit the work: reply with one JSON "
            f"object whose keys are {keys} and whose values say what that module must "
            "contain and which functions the others call.")  # fmt: skip
    return [{"role": "user", "content": text}]


def parse_blueprint(reply: str) -> dict[str, str]:
    start, end = reply.find("{"), reply.rfind("}")
    try:
        specs = json.loads(reply[start : end + 1]) if start >= 0 else None
    except ValueError as error:
        raise ReplyError(f"the blueprint is not valid JSON ({error})") from error
    if not isinstance(specs, dict):
        raise ReplyError("the blueprint holds no JSON object")
    missing = [m for m in MODULES if not isinstance(specs.get(m), str)]
    if missing:
        raise ReplyError(f"the blueprint has no spec for {', '.join(missing)}")
    return {m: specs[m] for m in MODULES}


def coder(module: str, plan: str, spec: str, written: dict[str, str]) -> list[dict]:
    others = _listing(written)
    text = (f"Plan:\n{plan}\n\n{CONTRACT}\n\nWrite {module}. Its spec: {spec}\n\n"
            + (f"Modules written so far:\n{others}\n\n" if others else "")
            + f"Reply with the whole of {module} in one ```python block.")  # fmt: skip
    return [{"role": "user", "content": text}]


def fenced(reply: str) -> list[tuple[str | None, str]]:
    """The reply's fenced blocks as (file name or None, code), read line by
    line: a name is any ``<name>.py`` on the opening fence line (``python
    task.py``, ``python:task.py``, ``title="task.py"``, a path) or a first line
    ``# file: <name>.py``, which is dropped from the code."""
    blocks, name, lines = [], None, None
    for line in reply.splitlines():
        if lines is None and line.lstrip().startswith("```"):
            found = PY_NAME.search(line)
            name, lines = (found.group(0) if found else None), []
        elif lines is not None and line.strip().startswith("```"):
            code = "\n".join(lines) + "\n"
            head = HEADER.match(code)
            label = name or (head.group(1) if head else None)
            blocks.append(
                (label.rsplit("/", 1)[-1] if label else None, HEADER.sub("", code, 1))
            )
            lines = None
        elif lines is not None:
            lines.append(line)
    return blocks


def parse_module(reply: str) -> str:
    blocks = fenced(reply)
    if not blocks:
        raise ReplyError("the reply holds no fenced code block")
    return blocks[-1][1]


def judge(plan: str, modules: dict[str, str], metrics: str) -> list[dict]:
    code = _listing(modules)
    text = (f"Approved plan:\n{plan}\n\nThe codebase:\n{code}\n\nIts accuracy per round, scored by the benchmark:\n"
            f"{metrics[:4000]}\n\nDoes the code do what the plan asks (algorithm, data split, "
            "model, metric), and do the metrics look sound? Answer PASS or FAIL on the first "
            "line; after FAIL, say what to change.")  # fmt: skip
    return [{"role": "user", "content": text}]


def parse_judgement(reply: str) -> tuple[bool, str]:
    """(passed, reason)."""
    passed, reason = _verdict(reply, "PASS", "FAIL", "judgement")
    return passed, reason or ("" if passed else "no reason given")


def debugger(modules: dict[str, str], report: str, log_tail: str,
             attempt: int = 1) -> list[dict]:  # fmt: skip
    """The Debugger's prompt for repair ``attempt`` (1-based). From the second
    on it says the earlier repairs failed, so a repeated failure is never the
    same question (nor the same cached call) as the one before."""
    code = _listing(modules)
    earlier = (f"This is repair attempt {attempt}: the {attempt - 1} before it did not "
               "fix the run, so try something else.\n\n") if attempt > 1 else ""  # fmt: skip
    text = (f"{CONTRACT}\n\nThe codebase:\n{code}\n\nIts run was diagnosed:\n{report}\n\n"
            f"End of its log:\n{log_tail}\n\n{earlier}Fix it with targeted changes that keep the "
            "functions' signatures. Reply with each module you change, whole, in a "
            "```python block whose first line is `# file: <name>.py`.")  # fmt: skip
    return [{"role": "user", "content": text}]


def parse_patch(reply: str) -> dict[str, str]:
    """The modules a reply rewrites, by name; blocks for other files are
    left out (the codebase has only its five modules)."""
    blocks = fenced(reply)
    patch = {name: code for name, code in blocks if name in MODULES}
    if not patch:
        others = sorted({name for name, _ in blocks if name})
        named = f" (it names {', '.join(others)})" if others else ""
        raise ReplyError(f"the reply names no module of the codebase in a fenced block{named}; "
                         "start each block with `# file: <name>.py`")  # fmt: skip
    return patch
