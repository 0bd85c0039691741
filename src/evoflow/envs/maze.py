"""Maze: reach the goal square of a grid maze from coordinates and nearby walls.

Description
-----------
The test split is LMRL-Gym's "double T" maze (10 × 13, goal at row 8, column 6)
from the 25 start positions AgentGym evaluates, in AgentGym's order, so task id
``i`` of the test split is AgentGym's game ``i``. Those 25 are every start of
the test goal, so no other double-T task can share it: ids 100… put the goal of
the double-T maze elsewhere (every start within 15 moves), ids 10000… are
procedurally carved mazes with loops. The validation split is 200 of the ids
100…, drawn with a fixed seed per distance band (``stratum``): 40 / 64 / 96 of
distance 1-4 / 5-8 / 9-15, eight times the test split's 5 / 8 / 12, so it is
double-T play like the test split. The training split is the other 385 of them
and the 500 carved mazes. A task is its (layout, goal, start) (``content_key``);
no two splits share one.

Observation
-----------
``The goal is at position 8, 6. Your current position is at position 1, 1. There
are walls to your left, above you, below you.`` — walls are listed in the order
right, left, above, below. The first observation and the one after every move
are exactly AgentGym's (``tests/envs/fixtures/agentgym_maze.json``); a bump into a
wall or an invalid action is said first, and reaching the goal is announced in
our words (AgentGym answers ``Success``).

Actions
-------
``move up``, ``move down``, ``move left``, ``move right``. Moving into a wall keeps
the position. Anything else is an invalid action (the turn still counts).

Rewards and termination
-----------------------
Reward 1 and success on reaching the goal; the default turn cap is 15.
"""

from __future__ import annotations

import hashlib
from collections import deque
from dataclasses import dataclass
from functools import cache

from evoflow.envs.base import Step, TaskError, TextEnv
from evoflow.seeding import choose, py_random

DOUBLE_T = (
    "1111111111111",
    "1000001000001",
    "1110111110111",
    "1110111110111",
    "1110111110111",
    "1110000000111",
    "1111110111111",
    "1111110111111",
    "1111110111111",
    "1111111111111",
)
DOUBLE_T_GOAL = (8, 6)
# AgentGym's test games 0-24, in their order.
TEST_STARTS = (
    (1, 1), (1, 2), (1, 3), (1, 4), (1, 5), (1, 7), (1, 8), (1, 9), (1, 10), (1, 11),
    (2, 3), (3, 3), (4, 3), (5, 3), (5, 4), (5, 5), (5, 6), (6, 6), (7, 6), (5, 7),
    (5, 8), (5, 9), (4, 9), (3, 9), (2, 9),
)  # fmt: skip
MOVES = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
# Order in which nearby walls are reported.
WALL_ORDER = (("right", "to your right"), ("left", "to your left"),
              ("up", "above you"), ("down", "below you"))  # fmt: skip
DOUBLE_T_TRAIN_BASE = 100
GENERATED_BASE = 10_000
GENERATED_COUNT = 500
MAX_TURNS = 15


@dataclass(frozen=True)
class Layout:
    """A maze task: wall grid ('1' = wall), goal and start cells."""

    grid: tuple[str, ...]
    goal: tuple[int, int]
    start: tuple[int, int]

    def is_open(self, cell: tuple[int, int]) -> bool:
        r, c = cell
        return (
            0 <= r < len(self.grid)
            and 0 <= c < len(self.grid[0])
            and self.grid[r][c] == "0"
        )

    def shortest_path(self, start: tuple[int, int]) -> list[str]:
        """Moves of a shortest path from ``start`` to the goal (BFS, fixed tie order)."""
        parents: dict[tuple[int, int], tuple[tuple[int, int], str] | None] = {
            start: None
        }
        queue = deque([start])
        while queue:
            cell = queue.popleft()
            if cell == self.goal:
                break
            for name, (dr, dc) in MOVES.items():
                nxt = (cell[0] + dr, cell[1] + dc)
                if self.is_open(nxt) and nxt not in parents:
                    parents[nxt] = (cell, name)
                    queue.append(nxt)
        if self.goal not in parents:
            raise ValueError(f"goal {self.goal} unreachable from {start}")
        moves, cell = [], self.goal
        while parents[cell] is not None:
            cell, name = parents[cell]
            moves.append(name)
        return moves[::-1]


def open_cells(grid: tuple[str, ...]) -> list[tuple[int, int]]:
    return [
        (r, c) for r, row in enumerate(grid) for c, ch in enumerate(row) if ch == "0"
    ]


@cache
def double_t_train_tasks() -> tuple[Layout, ...]:
    """Double-T maze with the goal anywhere but the test goal, every start in reach."""
    cells = open_cells(DOUBLE_T)
    tasks = []
    for goal in cells:
        if goal == DOUBLE_T_GOAL:
            continue
        for start in cells:
            layout = Layout(DOUBLE_T, goal, start)
            if start != goal and len(layout.shortest_path(start)) <= MAX_TURNS:
                tasks.append(layout)
    return tuple(tasks)


def generated_task(index: int) -> Layout:
    """A carved maze with a few loops; start and goal 3-15 moves apart."""
    rand = py_random("maze", "generated", index)
    rows, cols = rand.choice((7, 9, 11)), rand.choice((9, 11, 13))
    grid = [["1"] * cols for _ in range(rows)]
    stack = [(1, 1)]
    grid[1][1] = "0"
    while stack:
        r, c = stack[-1]
        options = [
            (r + dr, c + dc, r + dr // 2, c + dc // 2)
            for dr, dc in ((-2, 0), (2, 0), (0, -2), (0, 2))
            if 0 < r + dr < rows - 1
            and 0 < c + dc < cols - 1
            and grid[r + dr][c + dc] == "1"
        ]
        if not options:
            stack.pop()
            continue
        nr, nc, wr, wc = rand.choice(options)
        grid[wr][wc] = grid[nr][nc] = "0"
        stack.append((nr, nc))
    for _ in range(rows * cols // 12):  # knock out walls to create loops
        r, c = rand.randrange(1, rows - 1), rand.randrange(1, cols - 1)
        grid[r][c] = "0"
    frozen = tuple("".join(row) for row in grid)
    cells = open_cells(frozen)
    while True:
        goal, start = rand.sample(cells, 2)
        distance = len(Layout(frozen, goal, start).shortest_path(start))
        if 3 <= distance <= MAX_TURNS:
            return Layout(frozen, goal, start)


def layout_for(task_id: str) -> Layout:
    """The maze task of an id (see the module docstring for the id ranges)."""
    try:
        index = int(task_id)
    except ValueError:
        raise TaskError(f"maze: task id {task_id!r} is not an integer") from None
    if 0 <= index < len(TEST_STARTS):
        return Layout(DOUBLE_T, DOUBLE_T_GOAL, TEST_STARTS[index])
    train = double_t_train_tasks()
    if DOUBLE_T_TRAIN_BASE <= index < DOUBLE_T_TRAIN_BASE + len(train):
        return train[index - DOUBLE_T_TRAIN_BASE]
    if GENERATED_BASE <= index < GENERATED_BASE + GENERATED_COUNT:
        return generated_task(index - GENERATED_BASE)
    raise TaskError(f"maze: no task with id {task_id!r}")


DISTANCE_BANDS = ((1, 4), (5, 8), (9, MAX_TURNS))
# Double-T tasks of ids 100… held out for validation, per distance band: eight
# times the test split's 5 / 8 / 12.
VALIDATION_PER_BAND = {"distance 1-4": 40, "distance 5-8": 64, "distance 9-15": 96}


def distance_band(moves: int) -> str:
    """The stratum name of a task whose shortest path takes ``moves`` moves."""
    low, high = next(b for b in DISTANCE_BANDS if b[0] <= moves <= b[1])
    return f"distance {low}-{high}"


@cache
def _path(task_id: str) -> tuple[str, ...]:
    layout = layout_for(task_id)
    return tuple(layout.shortest_path(layout.start))


class MazeEnv(TextEnv):
    name = "maze"
    lists_actions = True
    max_turns = MAX_TURNS
    instructions = (
        "You are walking through a maze on a grid and want to reach the goal square "
        "in as few moves as possible. Positions are written as 'row, column': moving "
        "down adds 1 to the row, moving right adds 1 to the column. Every observation "
        "gives the goal position, your current position and the walls right next to "
        "you. Walking into a wall leaves you where you are.\n"
        "Actions: move up, move down, move left, move right."
    )

    @classmethod
    def stratum(cls, task_id: str) -> str:
        """Shortest-path length from start to goal, in bands: ``distance 1-4``,
        ``distance 5-8`` or ``distance 9-15``."""
        return distance_band(len(_path(task_id)))

    @classmethod
    def content_key(cls, task_id: str) -> str:
        """Layout, goal and start (``double-T goal 8,6 start 1,1``; other layouts
        are named by a digest of their wall grid)."""
        layout = layout_for(task_id)
        if layout.grid == DOUBLE_T:
            grid = "double-T"
        else:
            text = "\n".join(layout.grid).encode()
            grid = f"grid {hashlib.sha256(text).hexdigest()[:16]}"
        (gr, gc), (sr, sc) = layout.goal, layout.start
        return f"{grid} goal {gr},{gc} start {sr},{sc}"

    @classmethod
    def build_splits(cls) -> dict[str, list[str]]:
        double_t = [
            str(DOUBLE_T_TRAIN_BASE + i) for i in range(len(double_t_train_tasks()))
        ]
        held_out: set[str] = set()
        for band, quota in VALIDATION_PER_BAND.items():
            in_band = [t for t in double_t if cls.stratum(t) == band]
            held_out.update(choose(in_band, quota, "maze", "validation", band))
        train = [t for t in double_t if t not in held_out]
        train += [str(GENERATED_BASE + i) for i in range(GENERATED_COUNT)]
        return {
            "test": [str(i) for i in range(len(TEST_STARTS))],
            "train": train,
            "validation": [t for t in double_t if t in held_out],
        }

    def _reset(self, task_id: str) -> str:
        self._layout = layout_for(task_id)
        self._position = self._layout.start
        return self._describe()

    def _describe(self) -> str:
        (gr, gc), (r, c) = self._layout.goal, self._position
        walls = [
            words
            for move, words in WALL_ORDER
            if not self._layout.is_open((r + MOVES[move][0], c + MOVES[move][1]))
        ]
        if not walls:
            near = "There are no walls near you."
        elif len(walls) == 1:
            near = f"There is a wall {walls[0]}."
        else:
            near = f"There are walls {', '.join(walls)}."
        return (
            f"The goal is at position {gr}, {gc}. "
            f"Your current position is at position {r}, {c}. {near}"
        )

    def _step(self, action: str) -> Step:
        words = action.strip().strip(".").lower().split()
        if len(words) != 2 or words[0] != "move" or words[1] not in MOVES:
            return Step(
                f"'{action[:80]}' is not a valid action; use move up, move down, "
                f"move left or move right. {self._describe()}",
                reward=0.0,
                done=False,
                success=False,
                valid=False,
            )
        dr, dc = MOVES[words[1]]
        target = (self._position[0] + dr, self._position[1] + dc)
        if not self._layout.is_open(target):
            return Step(
                f"You bumped into a wall. {self._describe()}", 0.0, False, False
            )
        self._position = target
        if target == self._layout.goal:
            r, c = target
            return Step(f"You reached the goal at position {r}, {c}.", 1.0, True, True)
        return Step(self._describe(), 0.0, False, False)

    def available_actions(self) -> list[str]:
        return [f"move {m}" for m in MOVES]

    def expert_action(self) -> tuple[str, str]:
        self._check_running()
        path = self._layout.shortest_path(self._position)
        move = path[0]
        left = len(path) - 1
        if left == 0:
            thought = f"The goal is one step {move} from here."
        else:
            thought = (
                f"The shortest open route to the goal starts by going {move}; "
                f"{left} more move{'s' if left > 1 else ''} after this one."
            )
        return thought, f"move {move}"
