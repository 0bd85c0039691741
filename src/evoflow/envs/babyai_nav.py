"""Search helpers for the BabyAI expert, on a snapshot of one episode.

``Navigator`` answers the geometric questions the planner asks: the cheapest
full-knowledge route to an object, the fewest text actions that bring the agent
into a set of poses (primitive moves, possibly after one ``go to`` or
``go through``), the poses from which a cell can be seen, and where an object can
be put down without cutting anything off.
"""

from __future__ import annotations

from collections import deque

from evoflow.envs.babyai_world import (
    HEADINGS,
    Cell,
    Pose,
    PoseSearch,
    World,
    distances_to,
    front,
    neighbours,
    successors,
)

DROP_CANDIDATES = 6
OPEN_DOOR_PENALTY = 10


def plain(obj) -> str:
    """An object by colour and type only ('the red ball')."""
    return f"the {obj.color} {obj.type}"


class Navigator:
    """Routes, reachable poses and drop spots from the agent's current pose."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.pose = world.pose
        self.search = world.macro_search()
        self.walk = PoseSearch(self.pose, world.walkable)
        self.dist, self.parent = world.routes()
        self.cells = {id(obj): cell for obj, cell in world.objects()}
        self.safe_cache: dict[Cell, bool] = {}
        self.base_reach: tuple[set[Cell], set[Cell]] | None = None

    def cheapest(self, goals) -> tuple[int, str | None]:
        """Fewest text actions to reach one of ``goals``, and the first of them."""
        world = self.world
        if not goals:
            return 0, None
        dist = distances_to(goals, world.walkable)
        here = dist.get(self.pose)
        if here == 0:
            return 0, None
        best: tuple[int, str | None] = (1 << 30, None)
        if here is not None:
            for move, nxt in successors(self.pose):
                if move == "forward" and not world.walkable(nxt[:2]):
                    continue
                if dist.get(nxt) == here - 1:
                    best = (here, move)
                    break
        for obj, cell in world.known_objects():
            end = self.search.facing.get(cell)
            if end is None or end == self.pose:
                continue
            name = world.name(obj)
            options = [(end, f"go to {name}")]
            if obj.type == "door" and obj.is_open and cell != self.pose[:2]:
                options.append((self.through_end(end, cell), f"go through {name}"))
            for pose, action in options:
                if pose in dist and 1 + dist[pose] < best[0]:
                    best = (1 + dist[pose], action)
        return best

    def is_door(self, cell: Cell) -> bool:
        obj = self.world.cell(cell)
        return obj is not None and obj.type == "door"

    def revealing(self, cell: Cell) -> list[Pose]:
        """Reachable poses from which ``cell`` is in sight."""
        world = self.world
        size = world.game.agent_view_size
        poses = []
        for d, (fx, fy) in enumerate(HEADINGS):
            for ahead in range(size):
                for right in range(-(size // 2), size // 2 + 1):
                    x = cell[0] - ahead * fx + right * fy
                    y = cell[1] - ahead * fy - right * fx
                    pose = (x, y, d)
                    if pose in self.walk.parent and world.visible_from(pose, cell):
                        poses.append(pose)
        return poses

    def through_end(self, pose: Pose, door: Cell) -> Pose:
        beyond = front((*door, pose[2]))
        cell = beyond if self.world.walkable(beyond) else door
        return (*cell, pose[2])

    def poses_facing(self, cells) -> list[Pose]:
        poses = []
        for cell in sorted(cells):
            for d, stand in enumerate(reversed_steps(cell)):
                if self.world.walkable(stand) or stand == self.pose[:2]:
                    poses.append((*stand, d))
        return poses

    def path_to(self, cell: Cell) -> list[Cell] | None:
        """Cheapest full-knowledge route from the agent to a cell beside ``cell``."""
        ends = [n for n in neighbours(cell) if n in self.dist]
        if not ends:
            return None
        end = min(ends, key=lambda n: (self.dist[n], n))
        path = [end]
        while path[-1] in self.parent:
            path.append(self.parent[path[-1]])
        return path[::-1]

    def nearest(self, objs: list, open_penalty: bool = False):
        """The object the agent reaches most cheaply (an open door counts extra
        when it has to be opened: it must be closed first)."""

        def cost(obj) -> tuple[int, int]:
            cell = self.cells[id(obj)]
            reach = [self.dist[n] for n in neighbours(cell) if n in self.dist]
            extra = OPEN_DOOR_PENALTY if open_penalty and obj.is_open else 0
            return min(reach, default=1 << 30) + extra, self.world.labels[id(obj)][0]

        return min(objs, key=cost, default=None)

    def objects_at(self, positions) -> list:
        """Named objects now standing on the given cells."""
        found = (self.world.cell((int(x), int(y))) for x, y in positions)
        return [obj for obj in found if obj is not None and id(obj) in self.cells]

    def on_grid(self, objs) -> list:
        return [obj for obj in objs if id(obj) in self.cells]

    def obstacle_between(self, target, fixed: list):
        """A locked door, or a reachable object, on the way from ``target`` to
        the objects it must be put next to."""
        world = self.world
        dist, parent = world.routes(self.cells[id(target)], keyless=True)
        ends = [
            n for obj in fixed for n in neighbours(self.cells[id(obj)]) if n in dist
        ]
        if not ends:
            return None
        cell = min(ends, key=lambda n: (dist[n], n))
        path = [cell]
        while path[-1] in parent:
            path.append(parent[path[-1]])
        for cell in path[-2::-1]:
            obj = world.cell(cell)
            if obj is None or obj.type == "door" and not obj.is_locked:
                continue
            if obj.type == "door" or cell in self.walk.facing:
                return obj
        return None

    def drop_spots(self, avoid: set[Cell]) -> list[Pose]:
        """The nearest poses facing a free cell where an object blocks nothing
        (failing that, one off the ``avoid`` cells)."""
        world = self.world
        spots, fallback = [], []
        for pose in self.walk.parent:
            cell = front(pose)
            if not world.in_grid(cell) or world.cell(cell) is not None:
                continue
            if cell == self.pose[:2] or cell in avoid:
                continue
            fallback.append(pose)
            if self.is_safe(cell):
                spots.append(pose)
                if len(spots) == DROP_CANDIDATES:
                    break
        return spots or fallback[:DROP_CANDIDATES]

    def is_safe(self, cell: Cell) -> bool:
        """Whether an object on ``cell`` leaves every place and object reachable."""
        if cell not in self.safe_cache:
            world = self.world
            near_door = any(
                (obj := world.cell(n)) is not None and obj.type == "door"
                for n in neighbours(cell)
            )
            if self.base_reach is None:
                self.base_reach = self.reachable(None)
            floor, objects = self.base_reach
            after = self.reachable(cell)
            self.safe_cache[cell] = (
                not near_door and after[0] == floor - {cell} and after[1] >= objects
            )
        return self.safe_cache[cell]

    def reachable(self, blocked: Cell | None) -> tuple[set[Cell], set[Cell]]:
        """Floor cells reachable with every door passable, and the objects beside them."""
        world = self.world
        start = self.pose[:2]
        floor, objects = {start}, set()
        queue = deque([start])
        while queue:
            cell = queue.popleft()
            for nxt in neighbours(cell):
                if nxt in floor or nxt == blocked or not world.in_grid(nxt):
                    continue
                obj = world.cell(nxt)
                if obj is None or obj.type == "door":
                    floor.add(nxt)
                    queue.append(nxt)
                elif obj.type != "wall":
                    objects.add(nxt)
        return floor, objects

    def called(self, obj) -> str:
        """How thoughts refer to an object: its name once seen, else its kind."""
        cell = self.cells.get(id(obj))
        known = obj is self.world.carrying or (
            cell is not None and self.world.seen[cell]
        )
        return self.world.name(obj) if known else plain(obj)

    def fallback(self, what: str) -> tuple[str, str]:
        return f"I see no clear way to {what} yet, so I look around.", "turn left"


def reversed_steps(cell: Cell) -> list[Cell]:
    """For each heading, the cell to stand on to face ``cell``."""
    return [(cell[0] - dx, cell[1] - dy) for dx, dy in HEADINGS]
