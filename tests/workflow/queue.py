"""A run's scheduling, replayed from its Snakemake log (written with
EVOFLOW_JOB_BLOCKS=1, so that every job prints its block: rule, input, output,
jobid and, when not 0, priority).

Snakemake logs ``Execute N jobs...`` for every selection that starts jobs, then
the N blocks (its ``Select jobs to execute...`` is printed only when the
selection before started some, so it is no marker); a finished job logs
``Finished jobid: N``. The replay rebuilds, at each ``Execute``, which jobs were
ready (every input made by a job finished by then, or not made by the run) and
compares them with the jobs the selection started.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Jobs that only gather what the run made: nothing runs after them.
GATHERERS = frozenset({"all", "report", "helm_report"})


@dataclass
class Queue:
    # selections that started a job while a ready job of higher priority waited
    jumps: list[str] = field(default_factory=list)
    # selections that started chain jobs while a ready priority-0 job waited:
    # the rules of the chain jobs started (what the priority decided)
    contested: list[set[str]] = field(default_factory=list)
    # selections that started chain jobs while a ready chain job of lower
    # priority waited: the rules of both (what the exploring chain overtook)
    overtook: list[tuple[set[str], set[str]]] = field(default_factory=list)
    # priority-0 jobs whose outputs feed a job that is not a gatherer
    unprioritised: list[str] = field(default_factory=list)


def parse(log: str) -> tuple[dict, list]:
    """Jobs by id (rule, input, output, priority) and the log's events in
    order: ("execute", n), ("start", id), ("finish", id)."""
    jobs, events, current = {}, [], None
    for line in log.splitlines():
        text = line.strip()
        if text.startswith("Execute ") and text.endswith(" jobs..."):
            events.append(("execute", int(text.split()[1])))
        elif text.startswith(("rule ", "localrule ")) and text.endswith(":"):
            current = {"rule": text.split()[1].rstrip(":"), "input": [], "output": [],
                       "priority": 0}  # fmt: skip
        elif current is not None and text.startswith(("input:", "output:")):
            key, _, files = text.partition(":")
            current[key] = [f.strip() for f in files.split(",") if f.strip()]
        elif current is not None and text.startswith("jobid:"):
            current["id"] = text.split()[1]
            jobs[current["id"]] = current
            events.append(("start", current["id"]))
        elif current is not None and text.startswith("priority:"):
            current["priority"] = int(text.split()[1])
        elif text.startswith("Finished jobid:"):
            events.append(("finish", text.split()[2]))
        elif text.startswith("Job ") and text.split()[1].rstrip(":").isdigit():
            # a job that prints its own message (the target rule ``all``):
            # known to start and finish, nothing else
            events.append(("start", text.split()[1].rstrip(":")))
    return jobs, events


def _selections(jobs: dict, events: list) -> list[tuple[set[str], list[str]]]:
    """(ready job ids, started job ids) of each selection that started jobs."""
    maker = {out: job for job, spec in jobs.items() for out in spec["output"]}
    done, begun, selections, expected = set(), set(), [], 0
    for event in events:
        if event[0] == "execute":
            if expected:
                raise ValueError(f"log not replayable: {expected} blocks missing")
            ready = {j for j, spec in jobs.items() if j not in begun
                     and all(maker.get(f) in done or f not in maker for f in spec["input"])}  # fmt: skip
            selections.append((ready, []))
            expected = event[1]
        elif event[0] == "start":
            if not expected:
                raise ValueError(
                    f"log not replayable: job {event[1]} outside a selection"
                )
            begun.add(event[1])
            if event[1] in jobs:
                selections[-1][1].append(event[1])
            expected -= 1
        elif event[0] == "finish":
            done.add(event[1])
    if expected:
        raise ValueError(f"log not replayable: {expected} blocks missing")
    return selections


def replay(log: str) -> Queue:
    """The run's selections against its priorities (see the module). Raises
    on a log it cannot replay: no job blocks, a job never finished, a
    selection whose blocks are missing."""
    jobs, events = parse(log)
    started = {e[1] for e in events if e[0] == "start"}
    finished = {e[1] for e in events if e[0] == "finish"}
    if not jobs or started != finished:
        raise ValueError(
            f"log not replayable: {len(jobs)} job blocks, "
            f"{len(started - finished)} started and never finished"
        )
    queue = Queue()
    for ready, batch in _selections(jobs, events):
        waiting = ready - set(batch)
        top = max((jobs[j]["priority"] for j in waiting), default=0)
        passed = [j for j in batch if jobs[j]["priority"] < top]
        if passed:
            low = min(jobs[j]["priority"] for j in passed)
            waited = sorted(
                jobs[j]["rule"] for j in waiting if jobs[j]["priority"] > low
            )
            names = [jobs[j]["rule"] for j in passed]
            queue.jumps.append(f"{names} started while {waited} waited")
        chain = {j for j in ready if jobs[j]["priority"] > 0}
        waiting_leaves = ready - chain - set(batch)
        chain_started = {jobs[j]["rule"] for j in batch if j in chain}
        if chain_started and waiting_leaves:
            queue.contested.append(chain_started)
        lowest = min((jobs[j]["priority"] for j in waiting & chain), default=None)
        ahead = {
            jobs[j]["rule"] for j in batch if lowest and jobs[j]["priority"] > lowest
        }
        if ahead:
            behind = {
                jobs[j]["rule"]
                for j in waiting & chain
                if jobs[j]["priority"] == lowest
            }
            queue.overtook.append((ahead, behind))
    consumers: dict[str, set[str]] = {}
    for spec in jobs.values():
        for f in spec["input"]:
            consumers.setdefault(f, set()).add(spec["rule"])
    for spec in jobs.values():
        fed = (
            set().union(*(consumers.get(f, set()) for f in spec["output"])) - GATHERERS
        )
        if spec["priority"] == 0 and fed:
            queue.unprioritised.append(f"{spec['rule']} feeds {sorted(fed)}")
    return queue
