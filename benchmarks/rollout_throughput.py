"""Rollout engine throughput on Maze with the ``hf`` backend, three comparisons.

(a) Engine overhead: generated tokens/s of ``evoflow.rollout.engine.rollout``
    (one turn: env reset, chat template, one batched ``HFPolicy.generate``, ReAct
    parsing, env step, KV-cache bookkeeping) vs a bare left-padded
    ``model.generate`` of the same model on the same prompts, greedy, the same
    number of new tokens per row (stop tokens are switched off in the policy and
    ``min_new_tokens`` is set for ``generate``, so both decode exactly
    ``episodes × new_tokens`` tokens). Tokenising the baseline's prompts is not
    timed. Goal: ratio ≥ 0.85.
(b) Batching: ``--episodes`` Maze episodes played ``width = episodes`` at once vs
    one at a time (width 1), greedy, ``--horizon`` turns. Speed-up in wall time.
(c) History re-reading: ``--history-episodes`` 15-turn Maze episodes (greedy;
    nothing ends them early: no ``max_invalid``, and the untrained model rarely
    solves a maze) with ``HFPolicy(reuse_cache=True)`` vs ``reuse_cache=False``.
    Prints the wall-time ratio (goal ≥ 2×), whether the episodes are identical,
    and — from forward hooks on the model — prompt tokens encoded and the time
    split into prefill (encoding prompts), decode (one token per step) and the
    rest (envs, templates, cache copies), so the share of time spent re-encoding
    history without reuse is visible.

Repetitions alternate A B A B …; medians are printed. ``--threads`` sets torch's
intra-op threads (default 1: on a small machine shared with other jobs two
OpenMP threads wait on each other at every op, which swamps the comparison).
The default run takes about 14 minutes on 2 CPU cores, most of it (c) without
reuse; ``--parts`` picks comparisons, and ``--model tiny-random-llama`` with
fewer ``--turns`` makes a quick check.

    python benchmarks/rollout_throughput.py [--parts a b c]
        [--models tiny-random-llama smollm2-135m-instruct]
        [--model smollm2-135m-instruct] [--episodes 8] [--new-tokens 32]
        [--horizon 3] [--reps 3] [--history-episodes 4] [--turns 15]
        [--history-reps 1] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from collections.abc import Callable

import torch

from evoflow.envs import make_env
from evoflow.policy.base import SamplingParams
from evoflow.policy.hf import HFPolicy
from evoflow.rollout.engine import RolloutSpec, rollout
from evoflow.rollout.react import opening_messages
from evoflow.store.schema import Episode

ENV = "maze"


def task_ids(n: int) -> list[str]:
    env = make_env(ENV)
    ids = env.task_ids("test")
    return list(ids if n <= len(ids) else env.task_ids("train"))[:n]


def play(
    policy: HFPolicy, tasks: list[str], horizon: int, width: int, new_tokens: int
) -> tuple[list[Episode], float]:
    """Greedy episodes of ``tasks`` and the wall time of the whole rollout."""
    spec = RolloutSpec(
        experiment="bench",
        method="bench",
        split="test",
        source="explore",
        horizon=horizon,
        width=width,
        sampling=SamplingParams(temperature=0.0, max_new_tokens=new_tokens),
    )
    t0 = time.perf_counter()
    episodes = rollout(policy, lambda: make_env(ENV), tasks, spec, progress=False)
    return episodes, time.perf_counter() - t0


def interleaved(runs: dict[str, Callable[[], float]], reps: int) -> dict[str, float]:
    """Median seconds of each run, repeated A B A B …"""
    times: dict[str, list[float]] = defaultdict(list)
    for _ in range(reps):
        for name, run in runs.items():
            times[name].append(run())
    return {name: statistics.median(t) for name, t in times.items()}


def transcript(episode: Episode) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in episode.messages]


# --- (a) engine overhead ----------------------------------------------------


def first_prompts(policy: HFPolicy, tasks: list[str]) -> list[list[int]]:
    """Token ids of what the engine sends on turn 1 of each task."""
    env = make_env(ENV)
    chats = []
    for task in tasks:
        messages = opening_messages(env.system_prompt, env.reset(task))
        chats.append([{"role": m.role, "content": m.content} for m in messages])
    return [policy.encode(chat) for chat in chats]


@torch.inference_mode()
def bare_generate(policy: HFPolicy, prompts: list[list[int]], new_tokens: int):
    """Seconds of one left-padded greedy ``generate`` and its new tokens per row."""
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), policy.pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, prompt in enumerate(prompts):
        ids[row, width - len(prompt) :] = torch.tensor(prompt)
        mask[row, width - len(prompt) :] = 1
    t0 = time.perf_counter()
    out = policy.base.generate(
        input_ids=ids.to(policy.device),
        attention_mask=mask.to(policy.device),
        do_sample=False,
        max_new_tokens=new_tokens,
        min_new_tokens=new_tokens,
        pad_token_id=policy.pad_id,
    )
    return time.perf_counter() - t0, out[:, width:].cpu()


def engine_overhead(policy: HFPolicy, episodes: int, new_tokens: int, reps: int):
    tasks = task_ids(episodes)
    prompts = first_prompts(policy, tasks)
    stop_ids, policy.stop_ids = policy.stop_ids, set()  # fixed-length replies
    try:
        play(policy, tasks[:1], 1, 1, 2)  # warm-up, untimed
        bare_generate(policy, prompts[:1], 2)
        produced: dict[str, object] = {}

        def ours() -> float:
            played, seconds = play(policy, tasks, 1, len(tasks), new_tokens)
            assert all(e.n_tokens == new_tokens for e in played), "replies not fixed"
            produced["ours"] = [e.messages[2].content for e in played]
            return seconds

        def bare() -> float:
            seconds, tokens = bare_generate(policy, prompts, new_tokens)
            produced["bare"] = policy.tokenizer.batch_decode(
                tokens, skip_special_tokens=True
            )
            return seconds

        median = interleaved({"ours": ours, "bare": bare}, reps)
    finally:
        policy.stop_ids = stop_ids
    tokens = episodes * new_tokens
    same = sum(a == b for a, b in zip(produced["ours"], produced["bare"], strict=True))
    rate_ours, rate_bare = tokens / median["ours"], tokens / median["bare"]
    prompt_tokens = sum(len(p) for p in prompts)
    print(
        f"(a) {policy.model_id}: {episodes} episodes × {new_tokens} new tokens "
        f"({prompt_tokens} prompt tokens), medians of {reps}\n"
        f"    rollout engine (1 turn, env included): {median['ours']:7.2f} s "
        f"{rate_ours:8.1f} tok/s\n"
        f"    bare model.generate (left padding):    {median['bare']:7.2f} s "
        f"{rate_bare:8.1f} tok/s\n"
        f"    ratio engine/bare: {rate_ours / rate_bare:.3f} (goal ≥ 0.85); "
        f"same replies {same}/{episodes}"
    )


# --- (b) batching -------------------------------------------------------------


def batching(policy: HFPolicy, episodes: int, horizon: int, new_tokens, reps: int):
    tasks = task_ids(episodes)
    play(policy, tasks[:1], 1, 1, 2)  # warm-up, untimed
    played: dict[str, list[Episode]] = {}

    def run(width: int) -> Callable[[], float]:
        def timed() -> float:
            played[str(width)], seconds = play(
                policy, tasks, horizon, width, new_tokens
            )
            return seconds

        return timed

    median = interleaved({str(episodes): run(episodes), "1": run(1)}, reps)
    wide, narrow = played[str(episodes)], played["1"]
    same = sum(
        transcript(a) == transcript(b) for a, b in zip(wide, narrow, strict=True)
    )
    tokens = {k: sum(e.n_tokens for e in v) for k, v in played.items()}
    print(
        f"(b) {policy.model_id}: {episodes} Maze episodes, horizon {horizon}, "
        f"≤{new_tokens} new tokens per reply, medians of {reps}\n"
        f"    width {episodes:>2} (batched): {median[str(episodes)]:7.2f} s "
        f"{tokens[str(episodes)] / median[str(episodes)]:7.1f} tok/s "
        f"{episodes / median[str(episodes)]:6.3f} episodes/s\n"
        f"    width  1 (one by one): {median['1']:7.2f} s "
        f"{tokens['1'] / median['1']:7.1f} tok/s {episodes / median['1']:6.3f} episodes/s\n"
        f"    speed-up batched/one-by-one: {median['1'] / median[str(episodes)]:.2f}x; "
        f"identical episodes {same}/{episodes}"
    )


# --- (c) history re-reading ------------------------------------------------------


class ForwardClock:
    """Times the model's forward calls: prefill (several new tokens) vs decode."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.tokens: dict[str, int] = defaultdict(int)
        self._start = 0.0
        self._kind = "decode"
        self._hooks = [
            model.register_forward_pre_hook(self._before, with_kwargs=True),
            model.register_forward_hook(self._after),
        ]

    def _before(self, module, args, kwargs):
        ids, mask = kwargs["input_ids"], kwargs["attention_mask"]
        self._kind = "prefill" if ids.shape[1] > 1 else "decode"
        self.tokens[self._kind] += int(mask[:, -ids.shape[1] :].sum())
        self.tokens[self._kind + "_positions"] += ids.numel()
        self._start = time.perf_counter()

    def _after(self, module, args, output):
        self.seconds[self._kind] += time.perf_counter() - self._start

    def reset(self) -> None:
        self.seconds.clear()
        self.tokens.clear()

    def close(self) -> None:
        for hook in self._hooks:
            hook.remove()


def history(model: str, episodes: int, turns: int, new_tokens: int, reps: int):
    tasks = task_ids(episodes)
    policies = {
        "reuse": HFPolicy(model, reuse_cache=True),
        "no reuse": HFPolicy(model, reuse_cache=False),
    }
    clocks = {name: ForwardClock(p.base) for name, p in policies.items()}
    played: dict[str, list[Episode]] = {}
    split: dict[str, tuple[dict, dict, float]] = {}

    def run(name: str) -> Callable[[], float]:
        def timed() -> float:
            clocks[name].reset()
            played[name], seconds = play(
                policies[name], tasks, turns, episodes, new_tokens
            )
            split[name] = (
                dict(clocks[name].seconds),
                dict(clocks[name].tokens),
                seconds,
            )
            return seconds

        return timed

    try:
        for policy in policies.values():
            play(policy, tasks[:1], 1, 1, 2)  # warm-up, untimed
        median = interleaved({"reuse": run("reuse"), "no reuse": run("no reuse")}, reps)
    finally:
        for clock in clocks.values():
            clock.close()
    same = sum(
        transcript(a) == transcript(b)
        for a, b in zip(played["reuse"], played["no reuse"], strict=True)
    )
    played_turns = sum(e.n_turns for e in played["reuse"])
    print(
        f"(c) {model}: {episodes} Maze episodes × {turns} turns "
        f"({played_turns} turns played; terminations "
        f"{sorted({e.termination for e in played['reuse']})}), ≤{new_tokens} new "
        f"tokens per reply, medians of {reps}\n"
        f"    reuse_cache=True:  {median['reuse']:7.2f} s\n"
        f"    reuse_cache=False: {median['no reuse']:7.2f} s\n"
        f"    ratio no-reuse/reuse: {median['no reuse'] / median['reuse']:.2f}x "
        f"(goal ≥ 2x); identical episodes {same}/{episodes}"
    )
    for name in ("reuse", "no reuse"):  # last repetition of each
        seconds, tokens, wall = split[name]
        other = wall - seconds["prefill"] - seconds["decode"]
        print(
            f"    {name:>8}: prefill {seconds['prefill']:7.2f} s "
            f"({tokens['prefill']:6d} prompt tokens encoded, "
            f"{tokens['prefill_positions']:6d} with padding) | decode "
            f"{seconds['decode']:6.2f} s ({tokens['decode']} tokens) | other "
            f"{other:5.2f} s | prefill share {seconds['prefill'] / wall:.0%}"
        )
    off, on = split["no reuse"], split["reuse"]
    reread = off[1]["prefill"] - on[1]["prefill"]
    print(
        f"    without reuse, {reread} of {off[1]['prefill']} prompt tokens "
        f"({reread / off[1]['prefill']:.0%}) re-encode history already seen; the "
        f"extra prefill time is {(off[0]['prefill'] - on[0]['prefill']) / off[2]:.0%} "
        "of the no-reuse wall time"
    )
    for policy in policies.values():
        policy.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", choices=["a", "b", "c"], default=["a", "b", "c"])  # fmt: skip
    parser.add_argument("--models", nargs="+", default=["tiny-random-llama", "smollm2-135m-instruct"],
                        help="models of part (a)")  # fmt: skip
    parser.add_argument("--model", default="smollm2-135m-instruct", help="model of parts (b) and (c)")  # fmt: skip
    parser.add_argument("--episodes", type=int, default=8, help="(a), (b)")
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--horizon", type=int, default=3, help="turns in (b)")
    parser.add_argument("--reps", type=int, default=3, help="(a), (b)")
    parser.add_argument("--history-episodes", type=int, default=4, help="(c)")
    parser.add_argument("--turns", type=int, default=15, help="(c)")
    parser.add_argument("--history-reps", type=int, default=1, help="(c)")
    parser.add_argument("--threads", type=int, default=1, help="0: torch's default")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch threads: {torch.get_num_threads()}")
    if "a" in args.parts:
        for model in args.models:
            policy = HFPolicy(model, batch_size=args.episodes)
            engine_overhead(policy, args.episodes, args.new_tokens, args.reps)
            policy.close()
    if "b" in args.parts:
        policy = HFPolicy(args.model, batch_size=args.episodes)
        batching(policy, args.episodes, args.horizon, args.new_tokens, args.reps)
        policy.close()
    if "c" in args.parts:
        history(
            args.model,
            args.history_episodes,
            args.turns,
            args.new_tokens,
            args.history_reps,
        )


if __name__ == "__main__":
    main()
