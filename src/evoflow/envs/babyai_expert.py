"""Expert for the BabyAI text environment: a planner that knows the whole grid.

Each call looks at the mission's first unfinished part (minigrid's verifier keeps
that progress) and picks one text action:

* a macro (``go to``, ``pickup``, ``toggle and go through``) once its object is
  seen and reachable over seen cells;
* on the way there, the next closed door of the cheapest full-knowledge route
  (``toggle and go through``), or the fewest text actions to the edge of what
  has been seen (primitives, possibly after one ``go to`` / ``go through``);
* sub-goals for what blocks the route: the key of a locked door (opening the box
  that holds it if need be), an object standing in the way, or dropping what the
  agent carries when its hands must be free.

minigrid's ``BabyAIBot`` was the starting point, but mapped to text actions it
spends most of the 20-turn budget on primitive exploration steps and it fails
``KeyInBox`` and ``PutNextS7N4Carrying``; planning on the true grid avoids both.
The planner is a pure function of the episode state, so demonstrations replay.
Every action it takes is one of the available actions the observation lists,
spelled as listed, so a model trained on its demonstrations learns to copy from
that list.
"""

from __future__ import annotations

from minigrid.envs.babyai.core.verifier import (
    AfterInstr,
    AndInstr,
    BeforeInstr,
    GoToInstr,
    OpenInstr,
    PickupInstr,
    PutNextInstr,
)

from evoflow.envs.babyai_nav import Navigator, plain
from evoflow.envs.babyai_world import Cell, World, front, neighbours

MAX_DEPTH = 6
# A drop spot further than this many text actions is approached by first walking
# up to the object it must be next to.
NEAR_DROP = 4
PHRASES = {"left": "turn left", "right": "turn right", "forward": "move forward"}


def expert_move(world: World) -> tuple[str, str]:
    """(thought, action) for the current state of ``world``."""
    thought, action = Planner(world).for_instruction(pending(world.game.instrs))
    return thought[:1].upper() + thought[1:], action


def pending(instr):
    """The first part of a (possibly sequenced) mission that is not done yet."""
    if isinstance(instr, BeforeInstr):
        return pending(instr.instr_a if instr.a_done != "success" else instr.instr_b)
    if isinstance(instr, AfterInstr):
        return pending(instr.instr_b if instr.b_done != "success" else instr.instr_a)
    if isinstance(instr, AndInstr):
        return instr.instr_a if instr.a_done != "success" else instr.instr_b
    return instr


def remaining(current, world: World) -> list:
    """The unfinished action parts of the whole mission (``current`` among them)."""

    def walk(instr) -> list:
        if isinstance(instr, BeforeInstr):
            first = walk(instr.instr_a) if instr.a_done != "success" else []
            return first + walk(instr.instr_b)
        if isinstance(instr, AfterInstr):
            first = walk(instr.instr_b) if instr.b_done != "success" else []
            return first + walk(instr.instr_a)
        if isinstance(instr, AndInstr):
            parts = ((instr.instr_a, instr.a_done), (instr.instr_b, instr.b_done))
            return [part for part, done in parts if done != "success"]
        return [instr]

    parts = walk(world.game.instrs)
    return parts if current in parts else [current, *parts]


class Planner(Navigator):
    """One planning step: the text action that advances the mission most."""

    def for_instruction(self, instr) -> tuple[str, str]:
        world = self.world
        held = world.carrying
        if held is not None and self.drop_early(instr):
            return (
                f"I no longer need {self.called(held)} and will want free hands, so I "
                "put it down.",
                "drop",
            )
        if isinstance(instr, GoToInstr):
            targets = self.objects_at(instr.desc.obj_poss)
            if not targets and held is not None:
                return self.drop_anywhere("the goal wants me to face it on the floor")
            return self.reach(
                self.nearest(targets), "goto", "the goal asks me to go there"
            )
        if isinstance(instr, PickupInstr):
            if held is not None and held in instr.desc.obj_set:
                return self.drop_anywhere("the goal only counts picking it up afresh")
            targets = self.on_grid(instr.desc.obj_set)
            return self.reach(self.nearest(targets), "pickup", "the goal asks for it")
        if isinstance(instr, OpenInstr):
            doors = self.on_grid(instr.desc.obj_set)
            door = self.nearest(doors, open_penalty=True)
            return self.reach(door, "open", "the goal asks me to open it")
        if isinstance(instr, PutNextInstr):
            return self.put_next(instr)
        return self.fallback("the mission")

    def drop_early(self, instr) -> bool:
        """Whether to put the carried object down now, on the free cell ahead:
        a later part of the mission needs free hands and nothing needs it."""
        world, held = self.world, self.world.carrying
        ahead = front(self.pose)
        if not world.in_grid(ahead) or world.cell(ahead) is not None:
            return False
        if isinstance(instr, PutNextInstr) and held in instr.desc_move.obj_set:
            return False
        if held.type == "key" and any(
            obj.type == "door" and obj.is_locked and obj.color == held.color
            for obj, _ in world.objects()
        ):
            return False
        needs_hands = any(
            isinstance(part, PickupInstr | PutNextInstr)
            for part in remaining(instr, world)
        )
        return needs_hands and self.is_safe(ahead)

    def put_next(self, instr) -> tuple[str, str]:
        world = self.world
        fixed = self.objects_at(instr.desc_fixed.obj_poss)
        held = world.carrying
        if not fixed:
            if held is not None:
                return self.drop_anywhere(
                    "what I must put things next to is in my hands"
                )
            return self.fallback("the mission")
        if held is not None and held in instr.desc_move.obj_set:
            return self.drop_next_to(held, fixed)
        target = self.nearest(self.on_grid(instr.desc_move.obj_set))
        if target is None:
            return self.fallback("the mission")
        obstacle = self.obstacle_between(target, fixed)
        if obstacle is not None and obstacle.type == "door":
            why = f"I must carry {self.called(target)} through it later"
            return self.reach(obstacle, "open", why, depth=1)
        if obstacle is not None:
            why = f"it stands where I must carry {self.called(target)}"
            return self.reach(obstacle, "pickup", why, depth=1)
        why = f"the goal asks me to put it next to {plain(fixed[0])}"
        return self.reach(target, "pickup", why)

    def reach(self, target, act: str, why: str, depth: int = 0) -> tuple[str, str]:
        """Next action towards doing ``act`` (goto, pickup, open, open_box) on it."""
        world = self.world
        if target is None:
            return self.fallback("the mission")
        if depth > MAX_DEPTH:
            return self.fallback(plain(target))
        cell = self.cells[id(target)]
        path = self.path_to(cell)
        if path is None:
            return self.fallback(plain(target))
        for step in path[1:]:
            obj = world.cell(step)
            if obj is None or obj.type == "door" and not obj.is_locked:
                continue
            if obj.type == "door" and world.has_key_for(obj):
                continue
            if obj.type == "door":
                why = f"it stands between me and {plain(target)}"
                return self.reach(obj, "open", why, depth + 1)
            if step not in self.walk.facing:
                continue  # behind a closed door: open that first
            if obj.type == "box" and obj.contains is not None:
                return self.reach(obj, "open_box", "", depth + 1)
            if world.carrying is not None:
                return self.drop_anywhere(f"{self.called(obj)} blocks my way", path)
            return self.reach(obj, "pickup", "it blocks my way", depth + 1)
        if act == "open" and target.is_locked and not world.has_key_for(target):
            return self.fetch_key(target, depth)
        if world.seen[cell] and cell in self.search.facing:
            return self.finish(target, act, why, path)
        return self.travel(path, target)

    def finish(self, target, act: str, why: str, path: list[Cell]) -> tuple[str, str]:
        world = self.world
        name = world.name(target)
        facing = front(self.pose) == self.cells[id(target)]
        if act == "goto":
            return f"I go to {name} because {why}.", f"go to {name}"
        if act == "pickup":
            if world.carrying is not None:
                return self.drop_anywhere(f"I need free hands to pick up {name}", path)
            return f"I pick up {name} because {why}.", f"pickup {name}"
        if act == "open_box":
            if facing:
                return f"I open {name} to get the key inside.", "toggle"
            return f"The key I need is inside {name}, so I walk to it.", f"go to {name}"
        if not target.is_open:
            thought = f"I open {name} and go through because {why}."
            return thought, f"toggle and go through {name}"
        if facing:
            return f"{name} is already open, so I close it to open it again.", "toggle"
        return (
            f"{name} is open; I walk up to it to close and reopen it.",
            f"go to {name}",
        )

    def fetch_key(self, door, depth: int) -> tuple[str, str]:
        world = self.world
        door_name = self.called(door)
        keys = [
            obj
            for obj, _ in world.objects()
            if obj.type == "key" and obj.color == door.color
        ]
        if keys:
            why = f"{door_name} is locked and this key opens it"
            return self.reach(self.nearest(keys), "pickup", why, depth + 1)
        boxes = [
            obj
            for obj, _ in world.objects()
            if obj.type == "box"
            and obj.contains is not None
            and (obj.contains.type, obj.contains.color) == ("key", door.color)
        ]
        if boxes:
            return self.reach(self.nearest(boxes), "open_box", "", depth + 1)
        held = world.carrying
        if held is not None and held.type == "box" and held.contains is not None:
            return self.drop_anywhere(f"the key I need is inside {self.called(held)}")
        return self.fallback(f"a {door.color} key")

    def travel(self, path: list[Cell], target) -> tuple[str, str]:
        """Follow the route as far as seen cells and open doors allow."""
        world = self.world
        seen = bool(world.seen[self.cells[id(target)]])
        goal = self.called(target)
        stop = len(path)
        for index, cell in enumerate(path[1:], start=1):
            obj = world.cell(cell)
            if obj is not None and obj.type == "door" and not obj.is_open:
                if world.seen[cell] and cell in self.search.facing:
                    name = world.name(obj)
                    thought = f"I open {name} and go through it on my way to {goal}."
                    return thought, f"toggle and go through {name}"
                stop = index
                break
            if not world.seen[cell]:
                stop = index
                break
        ahead = path[stop] if stop < len(path) else self.cells[id(target)]
        action = None
        if not seen:
            _, action = self.cheapest(self.revealing(self.cells[id(target)]))
        if action is None and not world.seen[ahead]:
            cost, action = self.cheapest(self.revealing(ahead))
            door = next((c for c in path[stop:] if self.is_door(c)), None)
            if door is not None and door != ahead:
                door_cost, door_action = self.cheapest(self.revealing(door))
                if door_action is not None and door_cost <= cost + 1:
                    action = door_action
        if action is None:
            before = path[stop - 1]
            goals = [(*before, d) for d in range(4) if front((*before, d)) == ahead]
            _, action = self.cheapest(goals)
        if action is None:
            return self.fallback(goal)
        if action in PHRASES:
            if seen:
                return f"I {PHRASES[action]} to get closer to {goal}.", PHRASES[action]
            thought = (
                f"I have not seen {goal} yet, so I {PHRASES[action]} to look further."
            )
            return thought, PHRASES[action]
        return f"I {action} on my way to {goal}.", action

    def drop_anywhere(self, why: str, avoid: list[Cell] = ()) -> tuple[str, str]:
        """Put down what the agent carries, off the cells in ``avoid``."""
        held = self.called(self.world.carrying)
        goals = self.drop_spots(set(avoid))
        if self.pose in goals:
            return f"I put {held} down here because {why}.", "drop"
        _, action = self.cheapest(goals)
        if action is None:
            return self.fallback("a free spot")
        verb = PHRASES.get(action, action)
        return f"I {verb} to find a free spot for {held}, because {why}.", verb

    def drop_next_to(self, held, fixed: list) -> tuple[str, str]:
        world = self.world
        held_name = self.called(held)
        spots = set()
        for obj in fixed:
            for cell in neighbours(self.cells[id(obj)]):
                if world.in_grid(cell) and world.cell(cell) is None:
                    spots.add(cell)
        reachable = [
            pose for pose in self.poses_facing(spots) if pose in self.walk.parent
        ]
        safe = [pose for pose in reachable if self.is_safe(front(pose))]
        goals = safe or reachable
        anchor = self.nearest(fixed)
        if self.pose in goals:
            drop_cell = front(self.pose)
            near = next(o for o in fixed if self.cells[id(o)] in neighbours(drop_cell))
            return f"I put {held_name} down next to {self.called(near)}.", "drop"
        here = self.pose[:2]
        beside = any(self.cells[id(o)] in neighbours(here) for o in fixed)
        cost, action = self.cheapest(goals)
        if action is not None and (cost <= NEAR_DROP or beside):
            verb = PHRASES.get(action, action)
            return f"I {verb} to reach a free cell beside {self.called(anchor)}.", verb
        if beside:
            return self.fallback(self.called(anchor))
        return self.reach(anchor, "goto", f"I must put {held_name} down next to it")
