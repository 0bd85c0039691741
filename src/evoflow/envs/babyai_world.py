"""State and grid search of one BabyAI episode, shared by the env and its expert.

A ``World`` wraps one minigrid BabyAI level: the true grid, the agent's pose, what
it carries, which cells it has seen so far and the stable names of the objects.

Names follow AgentGym's spelling, ``<color> <type> <n>`` and, for doors,
``<color> <state> door <n>`` with the door's current state (open, closed,
locked). Numbers count per colour and type in the order objects first come into
view; objects that come into view together are numbered in AgentGym's order
(nearest first by steps ahead plus steps sideways, then farther rows first, then
left to right), so the names in the first view are the ones AgentGym shows. Once
given, a number never changes, unlike AgentGym's, which recounts every view.
The search helpers work on poses ``(x, y, heading)`` with minigrid's headings
(0 east, 1 south, 2 west, 3 north) and the primitive moves ``left``, ``right``
and ``forward``.
"""

from __future__ import annotations

import contextlib
import heapq
import io
import os
import re
import threading
from collections import deque
from collections.abc import Callable, Iterable

import numpy as np

from evoflow.envs.base import TaskError

# minigrid imports pygame, whose import prints a banner on stdout unless told not to.
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
import gymnasium as gym  # noqa: E402
import minigrid  # noqa: E402, F401  (registers the BabyAI levels with gymnasium)
from minigrid.core.actions import Actions  # noqa: E402
from minigrid.core.world_object import WorldObj  # noqa: E402
from minigrid.minigrid_env import MiniGridEnv  # noqa: E402

Cell = tuple[int, int]
Pose = tuple[int, int, int]

# AgentGym's level order: task index i plays LEVELS[i % 40] with seed i // 40.
LEVELS = (
    "GoToRedBallGrey", "GoToRedBall", "GoToRedBallNoDists", "GoToObjS6",
    "GoToLocalS8N7", "GoToObjMazeS7", "GoToImpUnlock", "GoToSeqS5R2",
    "GoToRedBlueBall", "GoToDoor", "GoToObjDoor", "Open", "OpenRedDoor",
    "OpenDoorLoc", "OpenRedBlueDoorsDebug", "OpenDoorsOrderN4Debug", "Pickup",
    "UnblockPickup", "PickupLoc", "PickupDistDebug", "PickupAbove",
    "PutNextLocalS6N4", "PutNextS7N4Carrying", "Unlock", "UnlockLocalDist",
    "KeyInBox", "UnlockPickupDist", "BlockedUnlockPickup", "UnlockToUnlock",
    "ActionObjDoor", "FindObjS7", "KeyCorridorS6R3", "OneRoomS20",
    "MoveTwoAcrossS8N9", "SynthS5R2", "SynthLoc", "SynthSeq", "MiniBossLevel",
    "BossLevel", "BossLevelNoUnlock",
)  # fmt: skip
# AgentGym runs minigrid < 2.5, whose ``BabyAI-GoToObjS6-v0`` builds a room of
# size 4 (minigrid 3 keeps only ``-v1``, with size 6): build that level directly.
GYM_SPECS: dict[str, tuple[str, dict]] = {
    "GoToObjS6": ("BabyAI-GoToObj-v0", {"room_size": 4}),
}
# Level families by name, for stratified subsets of the test split.
FAMILIES = (
    ("goto", "GoTo"),
    ("open", "Open"),
    ("pickup", "(Unblock)?Pickup"),
    ("putnext", "PutNext"),
    ("unlock", "Unlock|KeyInBox|BlockedUnlockPickup"),
)
SEEDS_PER_LEVEL = 1000
TASK_LIMIT = len(LEVELS) * SEEDS_PER_LEVEL
HEADINGS = ((1, 0), (0, 1), (-1, 0), (0, -1))
NAMED_TYPES = ("door", "key", "ball", "box")
PRIMITIVES = {
    "left": Actions.left,
    "right": Actions.right,
    "forward": Actions.forward,
    "pickup": Actions.pickup,
    "drop": Actions.drop,
    "toggle": Actions.toggle,
    "done": Actions.done,
}
# Costs of entering a cell when the expert plans a route with full knowledge.
CLOSED_DOOR_COST = 2
BLOCKER_COST = 25
LOCKED_DOOR_COST = 40


def level_for(task_id: str) -> tuple[str, int]:
    """(level name, minigrid seed) of a task id (AgentGym's ``data_idx``)."""
    if not re.fullmatch(r"0|[1-9][0-9]*", task_id):
        raise TaskError(f"babyai: task id {task_id!r} is not a non-negative integer")
    index = int(task_id)
    if index >= TASK_LIMIT:
        raise TaskError(
            f"babyai: no task with id {task_id!r} (ids are 0-{TASK_LIMIT - 1})"
        )
    return LEVELS[index % len(LEVELS)], index // len(LEVELS)


def level_family(level: str) -> str:
    """goto, open, pickup, putnext, unlock, or mixed (several skills per mission)."""
    for family, pattern in FAMILIES:
        if re.match(pattern, level):
            return family
    return "mixed"


def gym_spec(level: str) -> tuple[str, dict]:
    """(gymnasium id, keyword arguments) that build ``level`` as AgentGym does."""
    return GYM_SPECS.get(level, (f"BabyAI-{level}-v0", {}))


def door_state(door: WorldObj) -> str:
    return "open" if door.is_open else "locked" if door.is_locked else "closed"


def view_order(pose: Pose, cell: Cell) -> tuple[int, int, int]:
    """AgentGym's order of objects in a view: steps away, farther rows, left first."""
    fx, fy = HEADINGS[pose[2]]
    dx, dy = cell[0] - pose[0], cell[1] - pose[1]
    ahead, right = dx * fx + dy * fy, dy * fx - dx * fy
    return abs(ahead) + abs(right), -ahead, right


def front(pose: Pose) -> Cell:
    dx, dy = HEADINGS[pose[2]]
    return pose[0] + dx, pose[1] + dy


def successors(pose: Pose) -> tuple[tuple[str, Pose], ...]:
    x, y, d = pose
    return (
        ("forward", (*front(pose), d)),
        ("left", (x, y, (d - 1) % 4)),
        ("right", (x, y, (d + 1) % 4)),
    )


def is_walkable(obj: WorldObj | None) -> bool:
    return obj is None or (obj.type == "door" and obj.is_open)


def neighbours(cell: Cell) -> list[Cell]:
    return [(cell[0] + dx, cell[1] + dy) for dx, dy in HEADINGS]


class PoseSearch:
    """Breadth-first search over poses from ``start``, one primitive move per edge.

    ``facing[c]`` is the first pose reached that looks at cell ``c``; ties are
    broken by the fixed move order forward, left, right.
    """

    def __init__(self, start: Pose, walkable: Callable[[Cell], bool]) -> None:
        self.parent: dict[Pose, tuple[Pose, str] | None] = {start: None}
        self.facing: dict[Cell, Pose] = {}
        queue = deque([start])
        while queue:
            pose = queue.popleft()
            self.facing.setdefault(front(pose), pose)
            for move, nxt in successors(pose):
                if nxt in self.parent or (move == "forward" and not walkable(nxt[:2])):
                    continue
                self.parent[nxt] = (pose, move)
                queue.append(nxt)

    def moves_to(self, pose: Pose) -> list[str]:
        moves = []
        while (link := self.parent[pose]) is not None:
            pose, move = link
            moves.append(move)
        return moves[::-1]


def distances_to(
    goals: Iterable[Pose], walkable: Callable[[Cell], bool]
) -> dict[Pose, int]:
    """Fewest primitive moves from every pose to any of ``goals`` (reverse BFS)."""
    dist = {goal: 0 for goal in goals}
    queue = deque(dist)
    while queue:
        pose = queue.popleft()
        x, y, d = pose
        dx, dy = HEADINGS[d]
        before = [(x, y, (d + 1) % 4), (x, y, (d - 1) % 4)]
        if walkable((x - dx, y - dy)):
            before.append((x - dx, y - dy, d))
        for prev in before:
            if prev not in dist:
                dist[prev] = dist[pose] + 1
                queue.append(prev)
    return dist


_QUIET = threading.Lock()  # serialises the stdout swap around level generation


def new_game(level: str, seed: int) -> tuple[MiniGridEnv, dict]:
    """The unwrapped minigrid level, reset with ``seed``, and its first observation."""
    name, kwargs = gym_spec(level)
    game = gym.make(name, disable_env_checker=True, **kwargs).unwrapped
    # Level generation prints every rejected sample on stdout. Rollouts reset
    # envs from several threads, and redirect_stdout swaps the one process-wide
    # sys.stdout: unserialised, an exit could restore another thread's buffer
    # and swallow the process's output from then on.
    with _QUIET, contextlib.redirect_stdout(io.StringIO()):
        obs, _ = game.reset(seed=seed)
    return game, obs


class World:
    """One running BabyAI level plus what the agent has seen of it."""

    def __init__(self, level: str, seed: int) -> None:
        self.game, _ = new_game(level, seed)
        self.seen = np.zeros((self.game.width, self.game.height), dtype=bool)
        self.labels = rank_objects(self.game)
        self.numbers: dict[int, int] = {}
        self._counts: dict[tuple[str, str], int] = {}
        self.look()
        if self.carrying is not None:
            self._number(self.carrying)

    # --- state --------------------------------------------------------------

    @property
    def pose(self) -> Pose:
        x, y = self.game.agent_pos
        return int(x), int(y), int(self.game.agent_dir)

    @property
    def carrying(self) -> WorldObj | None:
        return self.game.carrying

    def cell(self, pos: Cell) -> WorldObj | None:
        x, y = pos
        if 0 <= x < self.game.width and 0 <= y < self.game.height:
            return self.game.grid.get(x, y)
        return None

    def in_grid(self, pos: Cell) -> bool:
        return 0 <= pos[0] < self.game.width and 0 <= pos[1] < self.game.height

    def walkable(self, pos: Cell) -> bool:
        return self.in_grid(pos) and is_walkable(self.cell(pos))

    def seen_walkable(self, pos: Cell) -> bool:
        return self.walkable(pos) and bool(self.seen[pos])

    def name(self, obj: WorldObj) -> str:
        """``grey ball 1``, or for a door ``red closed door 2`` (state as it is now)."""
        number = self.numbers[id(obj)]
        if obj.type == "door":
            return f"{obj.color} {door_state(obj)} door {number}"
        return f"{obj.color} {obj.type} {number}"

    def is_named(self, obj: WorldObj | None) -> bool:
        return obj is not None and id(obj) in self.numbers

    def objects(self) -> list[tuple[WorldObj, Cell]]:
        """Tracked objects on the grid with their cells, in reading order."""
        found = []
        for j in range(self.game.height):
            for i in range(self.game.width):
                obj = self.game.grid.get(i, j)
                if obj is not None and id(obj) in self.labels:
                    found.append((obj, (i, j)))
        return sorted(found, key=lambda item: self.labels[id(item[0])][0])

    def known_objects(self) -> list[tuple[WorldObj, Cell]]:
        """Named objects on cells the agent has seen, nearest first (AgentGym's
        view order, extended to objects out of view)."""
        known = [
            (obj, cell)
            for obj, cell in self.objects()
            if self.seen[cell] and id(obj) in self.numbers
        ]
        return sorted(known, key=lambda item: view_order(self.pose, item[1]))

    def find(self, obj: WorldObj) -> Cell | None:
        return next((cell for o, cell in self.objects() if o is obj), None)

    def has_key_for(self, door: WorldObj) -> bool:
        held = self.carrying
        return held is not None and held.type == "key" and held.color == door.color

    # --- acting -------------------------------------------------------------

    def look(self) -> None:
        """Mark the cells in view as seen and name the objects seen for the first
        time, in AgentGym's view order."""
        _, visible = self.game.gen_obs_grid()
        size = self.game.agent_view_size
        x, y, d = self.pose
        fx, fy = HEADINGS[d]
        rx, ry = -fy, fx
        new = []
        for i, j in zip(*np.nonzero(visible), strict=True):
            ahead, right = size - 1 - int(j), int(i) - size // 2
            cell = (x + ahead * fx + right * rx, y + ahead * fy + right * ry)
            if not self.in_grid(cell) or (ahead, right) == (0, 0):
                continue
            self.seen[cell] = True
            obj = self.cell(cell)
            if obj is not None and id(obj) in self.labels:
                new.append((view_order(self.pose, cell), obj))
        self.seen[x, y] = True
        for _, obj in sorted(new, key=lambda item: item[0]):
            self._number(obj)

    def _number(self, obj: WorldObj) -> None:
        if id(obj) not in self.numbers:
            key = (obj.color, obj.type)
            self._counts[key] = self._counts.get(key, 0) + 1
            self.numbers[id(obj)] = self._counts[key]

    def act(self, primitive: str) -> tuple[float, bool, bool]:
        """One minigrid step: (reward, terminated, truncated)."""
        _, reward, terminated, truncated, _ = self.game.step(PRIMITIVES[primitive])
        self.look()
        return float(reward), bool(terminated), bool(truncated)

    # --- search -------------------------------------------------------------

    def macro_search(self) -> PoseSearch:
        """Poses the agent reaches over walkable cells it has already seen."""
        return PoseSearch(self.pose, self.seen_walkable)

    def entry_cost(self, pos: Cell, keyless: bool = False) -> int | None:
        """Cost of stepping into a cell when planning with full knowledge.

        ``keyless`` prices locked doors as if the agent carried no key.
        """
        if not self.in_grid(pos):
            return None
        obj = self.cell(pos)
        if obj is None:
            return 1
        if obj.type == "wall":
            return None
        if obj.type != "door":
            return BLOCKER_COST
        if obj.is_open:
            return 1
        if obj.is_locked and (keyless or not self.has_key_for(obj)):
            return LOCKED_DOOR_COST
        return CLOSED_DOOR_COST

    def routes(
        self, start: Cell | None = None, keyless: bool = False
    ) -> tuple[dict[Cell, int], dict[Cell, Cell]]:
        """Cheapest full-knowledge routes from ``start`` (default: the agent)."""
        start = self.pose[:2] if start is None else start
        dist, parent = {start: 0}, {}
        heap = [(0, start)]
        while heap:
            cost, cell = heapq.heappop(heap)
            if cost > dist[cell]:
                continue
            for nxt in neighbours(cell):
                step = self.entry_cost(nxt, keyless)
                if step is None or cost + step >= dist.get(nxt, 1 << 30):
                    continue
                dist[nxt], parent[nxt] = cost + step, cell
                heapq.heappush(heap, (cost + step, nxt))
        return dist, parent

    def visible_from(self, pose: Pose, cell: Cell) -> bool:
        """Whether the agent standing in ``pose`` would see ``cell``."""
        game, size = self.game, self.game.agent_view_size
        fx, fy = HEADINGS[pose[2]]
        dx, dy = cell[0] - pose[0], cell[1] - pose[1]
        ahead, right = dx * fx + dy * fy, dy * fx - dx * fy
        if not (0 <= ahead < size and abs(right) <= size // 2):
            return False
        saved = game.agent_pos, game.agent_dir
        try:
            game.agent_pos, game.agent_dir = pose[:2], pose[2]
            _, visible = game.gen_obs_grid()
        finally:
            game.agent_pos, game.agent_dir = saved
        return bool(visible[size // 2 + right, size - 1 - ahead])


def rank_objects(game) -> dict[int, tuple[int, WorldObj]]:
    """Every door, key, ball and box with a fixed rank (reading order of the grid;
    a box's content right after the box, an object carried at the start last).

    Ranks break ties deterministically; entries keep their object alive, so its
    ``id`` is never reused.
    """
    ordered = []
    for j in range(game.height):
        for i in range(game.width):
            obj = game.grid.get(i, j)
            if obj is not None and obj.type in NAMED_TYPES:
                ordered.append(obj)
                if obj.type == "box" and obj.contains is not None:
                    ordered.append(obj.contains)
    if game.carrying is not None:
        ordered.append(game.carrying)
    return {id(obj): (rank, obj) for rank, obj in enumerate(ordered)}
