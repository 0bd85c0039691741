"""BabyAI as AgentGym's server words it: ``envs.babyai.dialect: agentgym``.

The same 40 levels, task ids and splits as ``evoflow.envs.babyai``, but every
observation, action name and reward is what AgentGym's BabyAI server (commit
3ef9235, minigrid 2.3) answers, byte for byte; ``docs/reference/environments.md``
lists every difference from our default dialect. The rules, restated from
observing that server:

* **View.** The agent's 7×7 minigrid view image is read cell by cell (farthest
  row first, left to right) and stably sorted by steps away (ahead plus
  sideways). Doors, keys, balls, boxes, goals, lava and walls are noted; all but
  walls are described ("There is a grey key 1 1 steps in front of you and 1
  steps to your left.  "), numbered per colour, type (and door state) anew in
  every view. "You are facing a wall|box N steps away." names the nearest wall or
  box on the agent's line of sight. On the first observation of
  ``PutNextS7N4Carrying`` the carried object is still shown on the floor (the
  level hands it over after minigrid rendered the view).
* **Actions.** ``turn left/right``, ``move forward`` (unless a wall or box is
  one step ahead), ``pickup``/``go to <color> <type> <n>``, ``drop``, ``go
  through <open door>``, ``toggle and go through <closed or locked door>`` (a
  locked one only while carrying its key), ``toggle`` (facing such a door), ``go
  to goal`` and ``check available actions`` (any text containing "check").
  Walking actions follow a breadth-first search inside the view's bounding box
  that treats unseen cells and closed doors as free; the primitive steps stop
  early when one leaves the view image unchanged. An action not listed is
  answered with the reason, and changes nothing.
* **Rewards.** AgentGym's reward is minigrid's reward of the last primitive step
  of the latest action (earlier steps' rewards are lost), kept by answers that
  change nothing; a ``Step`` carries its change, so an episode's rewards sum to
  AgentGym's reward at its end (as ``evoflow.envs.remote`` does when it plays
  AgentGym's server). ``done`` is minigrid's termination, except that a
  termination with reward ≤ 0.5 (a late success, or a failure the level
  declares) is hidden: the episode goes on, although the observation says "The
  task is completed."; minigrid's step limit is ignored. A step's ``success`` is
  ``done`` with a positive reward.

There is no expert in this dialect (its action names change from view to view):
demonstrations come from a ``demos_file``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from minigrid.core.actions import Actions
from minigrid.core.constants import IDX_TO_COLOR, IDX_TO_OBJECT

from evoflow.envs.babyai import BabyAIEnv, shown_goal
from evoflow.envs.babyai_actions import list_line
from evoflow.envs.babyai_world import HEADINGS, level_for, new_game
from evoflow.envs.base import EnvError, Step

Cell = tuple[int, int]
State = tuple[Cell, int]  # (cell, heading)

DOOR_STATES = ("open", "closed", "locked")
NOTED = ("door", "key", "ball", "box", "goal", "lava", "wall")
# Names holding one of these words stop a walk and a drop.
BLOCKING = ("wall", "box", "lava", "ball", "key")
LEFT, RIGHT, FORWARD = Actions.left, Actions.right, Actions.forward
PICKUP, DROP, TOGGLE = Actions.pickup, Actions.drop, Actions.toggle
UNKNOWN = "The action is not recognized. Please check valid actions."
NO_PATH = "You cannot {verb} {target}, as there is no path leading to it."
COMPLETED = "\n The task is completed."


@dataclass(frozen=True)
class Noted:
    """A thing in view: its name (``red closed door``), cell and distance."""

    name: str
    cell: Cell
    distance: int


@dataclass(frozen=True)
class View:
    """What one view image shows, in AgentGym's order, and the search box."""

    cell: Cell
    heading: int
    things: tuple[Noted, ...]  # nearest first
    barriers: tuple[Noted, ...]  # walls and boxes on the line of sight, nearest first
    xs: range
    ys: range

    def offset(self, cell: Cell) -> tuple[int, int]:
        """(steps ahead, steps to the right) of ``cell``."""
        fx, fy = HEADINGS[self.heading]
        dx, dy = cell[0] - self.cell[0], cell[1] - self.cell[1]
        return dx * fx + dy * fy, dx * -fy + dy * fx


def _span(near: int, far: int) -> range:
    return range(far, near + 1) if far < near else range(near, far)


def read_view(game, obs: dict) -> View:
    """The things of ``obs``'s image with their cells and distances."""
    size = game.agent_view_size
    x, y = (int(v) for v in game.agent_pos)
    heading = int(obs["direction"])
    (fx, fy), (rx, ry) = HEADINGS[heading], HEADINGS[(heading + 1) % 4]
    left, top = (
        x + fx * (size - 1) - rx * (size // 2),
        y + fy * (size - 1) - ry * (size // 2),
    )
    xs = _span(left, left + size * (rx - fx))
    ys = _span(top, top + size * (ry - fy))
    things, barriers = [], []
    for j in range(size):
        for i in range(size):
            cx, cy = left - fx * j + rx * i, top - fy * j + ry * i
            distance = abs(x - cx) + abs(y - cy)
            kind = IDX_TO_OBJECT[int(obs["image"][i, j, 0])]
            if cx < 0 or cy < 0 or distance == 0 or kind not in NOTED:
                continue
            color = IDX_TO_COLOR[int(obs["image"][i, j, 1])]
            state = DOOR_STATES[int(obs["image"][i, j, 2])]
            name = f"{color} {state} door" if kind == "door" else f"{color} {kind}"
            things.append(Noted(name, (cx, cy), distance))
            dx, dy = cx - x, cy - y
            if kind in ("box", "wall") and fx * dy - fy * dx == 0:
                barriers.append(Noted(kind, (cx, cy), dx * fx + dy * fy))
    things.sort(key=lambda t: t.distance)
    barriers.sort(key=lambda t: t.distance)
    return View((x, y), heading, tuple(things), tuple(barriers), xs, ys)


def describe(view: View, carrying) -> str:
    """The observation text (without the action list)."""
    if view.things:
        text, counts = "In front of you in this room, you can see several objects: ", {}
        for thing in view.things:
            if "wall" in thing.name:
                continue
            ahead, right = view.offset(thing.cell)
            if right == 0:
                where = f"right in front of you {ahead} steps away. "
            else:
                side = "right" if right > 0 else "left"
                where = f"{ahead} steps in front of you and {abs(right)} steps to your {side}. "
            counts[thing.name] = counts.get(thing.name, 0) + 1
            text += f"There is a {thing.name} {counts[thing.name]} {where} "
    else:
        text = "You cannot see any objects within sight."
    text += "The room has walls around you. "
    if view.barriers:
        nearest = view.barriers[0]
        text += f"You are facing a {nearest.name} {nearest.distance} steps away. "
    if carrying is None:
        return text + "You are not carrying anything."
    return text + f"You are carrying a {carrying.color} {carrying.type}."


def _turned(state: State, move: int) -> State:
    (x, y), heading = state
    if move == LEFT:
        return (x, y), (heading - 1) % 4
    if move == RIGHT:
        return (x, y), (heading + 1) % 4
    dx, dy = HEADINGS[heading]
    return (x + dx, y + dy), heading


def _blocked(state: State, view: View, reached: set[State]) -> bool:
    # A move is only ever refused while there is something in view to check.
    if not (view.things or view.barriers):
        return False
    (x, y), _ = state
    return (
        x not in view.xs
        or y not in view.ys
        or state in reached
        or any(
            t.cell == (x, y) and any(word in t.name for word in BLOCKING)
            for t in (*view.things, *view.barriers)
        )
    )


def plan(view: View, goal: Cell, arrive: bool) -> list[int] | None:
    """Primitive moves onto ``goal`` (``arrive``) or to face it from next door."""
    start: State = (view.cell, view.heading)
    queue, reached, parent = deque([start]), set(), {}
    while queue:
        state = queue.popleft()
        reached.add(state)
        (x, y), heading = state
        if (
            (x, y) == goal
            if arrive
            else (goal[0] - x, goal[1] - y) == HEADINGS[heading]
        ):
            moves = []
            while state != start:
                state, move = parent[state]
                moves.append(move)
            return moves[::-1]
        for move in (FORWARD, LEFT, RIGHT):
            following = _turned(state, move)
            if not _blocked(following, view, reached):
                queue.append(following)
                parent[following] = (state, move)  # the last one queued wins
    return None


def _number(actions, errors, counts, verb: str, name: str, moves) -> None:
    """``<verb> <name> <n>``: n counts the names with a path so far."""
    first = f"{verb} {name} 1"
    if moves is not None:
        counts[name] = 1 if first not in actions else counts[name] + 1
        actions[f"{verb} {name} {counts[name]}"] = moves
    else:
        target = f"{name} 1" if first not in actions else f"{name} {counts[name] + 1}"
        errors[f"{verb} {target}"] = NO_PATH.format(verb=verb, target=target)


def _door_actions(view: View, carrying, actions: dict, errors: dict) -> None:
    counts: dict[str, int] = {}
    for door in view.things:
        if "door" not in door.name:
            continue
        counts[door.name] = counts.get(door.name, 0) + 1
        label = f"{door.name} {counts[door.name]}"
        through, toggle = f"go through {label}", f"toggle and go through {label}"
        if "open door" in door.name:
            moves = plan(view, door.cell, arrive=True)
            if moves is None:
                errors[through] = NO_PATH.format(verb="go through", target=label)
            else:
                actions[through] = moves
            continue
        if "locked door" in door.name:
            if carrying is None or carrying.type != "key":
                errors[toggle] = f"You cannot {toggle}, as you are not carrying a key."
                continue
            if carrying.color != door.name.split(" ")[0]:
                errors[toggle] = (
                    f"You cannot {toggle}, as the color of the key you are carrying "
                    "does not match the color of door."
                )
                continue
        moves = plan(view, door.cell, arrive=False)
        if moves is None:  # AgentGym prints its whole counter here
            target = f"{door.name} {counts}"
            errors[toggle] = NO_PATH.format(verb="toggle and go through", target=target)
        else:
            actions[toggle] = [*moves, TOGGLE, FORWARD]
        if moves == []:
            actions["toggle"] = [TOGGLE]
        if "closed door" in door.name:
            errors[through] = (
                f"You cannot {through}, as it is closed. You should toggle it first."
            )


def action_table(view: View, carrying) -> tuple[dict[str, list[int]], dict[str, str]]:
    """Listed actions with their primitive moves, and the refusals of others."""
    actions: dict[str, list[int]] = {"turn left": [LEFT], "turn right": [RIGHT]}
    errors: dict[str, str] = {}
    if not view.barriers or view.barriers[0].distance > 1:
        actions["move forward"] = [FORWARD]
    else:
        errors["move forward"] = (
            "There is a barrier in front of you, you can't move forward."
        )
    named = [t for t in view.things if "wall" not in t.name and "goal" not in t.name]
    if carrying is None:
        counts: dict[str, int] = {}
        for thing in named:
            if "door" not in thing.name:
                moves = plan(view, thing.cell, arrive=False)
                moves = None if moves is None else [*moves, PICKUP]
                _number(actions, errors, counts, "pickup", thing.name, moves)
        errors["drop"] = "You cannot drop the object, as you are not carrying anything."
    else:
        dx, dy = HEADINGS[view.heading]
        ahead = (view.cell[0] + dx, view.cell[1] + dy)
        if any(
            t.cell == ahead and any(word in t.name for word in BLOCKING)
            for t in view.things
        ):
            errors["drop"] = (
                "You cannot drop the object, as there is already an object in front of you."
            )
        else:
            actions["drop"] = [DROP]
    _door_actions(view, carrying, actions, errors)
    for goal in (t for t in view.things if "goal" in t.name):
        moves = plan(view, goal.cell, arrive=True)
        if moves is None:
            errors["go to goal"] = (
                "You cannot go to the goal, as there is no path leading to it."
            )
        else:
            actions["go to goal"] = moves
    counts = {}
    for thing in named:
        moves = plan(view, thing.cell, arrive=False)
        _number(actions, errors, counts, "go to", thing.name, moves)
    actions["check available actions"] = []
    return actions, errors


class AgentGymBabyAIEnv(BabyAIEnv):
    """BabyAI with AgentGym's observations, actions and rewards (module docstring)."""

    _game = None  # the running minigrid game (this dialect has no World)

    def _reset(self, task_id: str) -> str:
        self._game, obs = new_game(*level_for(task_id))
        self._reward, self._done = 0.0, False
        view = self._see(obs)
        return f"Your goal: {self.goal}\n{view}\n{self._listed()}"

    @property
    def goal(self) -> str:
        if self._game is None:
            raise EnvError(f"{self.name}: no goal before reset(task_id)")
        return shown_goal(self._game.mission)

    def _see(self, obs: dict) -> str:
        """Read ``obs``: remember its image and actions; return its description."""
        view = read_view(self._game, obs)
        self._image = obs["image"]
        self._actions, self._errors = action_table(view, self._game.carrying)
        return describe(view, self._game.carrying)

    def _listed(self) -> str:
        return list_line(list(self._actions))

    def _answer(self, text: str, valid: bool) -> Step:
        """An answer that leaves the level (and AgentGym's reward) as it is."""
        success = self._done and self._reward > 0
        return Step(f"{text}\n{self._listed()}", 0.0, self._done, success, valid)

    def invalid_reply(self, reason: str, format_name: str | None = None) -> Step:
        self._check_running()
        return self._answer(UNKNOWN, valid=False)

    def _step(self, action: str) -> Step:
        text = action.lower().strip()
        if "check" in text:
            listed = ", ".join(self._actions)
            return self._answer(f"You can take the following actions: {listed}", True)
        if text not in self._actions:
            reason = (
                "No change in state." if not text else self._errors.get(text, UNKNOWN)
            )
            return self._answer(reason, valid=False)
        if not self._actions[text]:
            return self._answer("No change in state.", valid=True)
        for move in self._actions[text]:
            obs, reward, terminated, _, _ = self._game.step(move)
            if not (obs["image"] != self._image).any():
                break  # the move changed nothing in view: the rest is not tried
            self._image = obs["image"]
        return self._settle(obs, float(reward), bool(terminated))

    def _settle(self, obs: dict, reward: float, terminated: bool) -> Step:
        """AgentGym's bookkeeping after the last primitive step of an action."""
        text = self._see(obs)
        if terminated:
            text += COMPLETED
        change = reward - self._reward
        self._reward, self._done = reward, terminated and reward > 0.5
        if self._reward == 1 and not self._done:
            self._done, text = True, text + COMPLETED
        success = self._done and self._reward > 0
        return Step(f"{text}\n{self._listed()}", change, self._done, success, True)

    def available_actions(self) -> list[str]:
        return list(self._actions) if self.running else []

    def planned_moves(self, action: str) -> list[int]:
        """The primitive moves ``action`` would try now (empty: none or unknown)."""
        return (
            list(self._actions.get(action.lower().strip(), ())) if self.running else []
        )

    @property
    def primitive_steps(self) -> int:
        """Primitive steps taken this episode (AgentGym's reward counts them)."""
        return 0 if self._game is None else int(self._game.step_count)

    def expert_action(self) -> tuple[str, str]:
        raise EnvError(
            "babyai: the agentgym dialect has no expert; give envs.babyai.demos_file "
            "(AgentTraj JSON) for demonstrations"
        )
