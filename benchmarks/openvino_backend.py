"""OpenVINO GenAI against the hf backend on the embedded evaluation's episodes.

Both play the same greedy test episodes of ``config/config.yaml`` (its strata,
turn caps and width; ``--tasks`` per env, ``--envs`` to pick some) through the
rollout engine, so every turn's chats, adapters and action choices reach each
backend alike. ``hf`` is ``HFPolicy`` (bf16 where the CPU has bf16 units, a
batch-wide adapter merged into the weights). ``ov`` is OpenVINO GenAI's
continuous-batching pipeline behind the same ``Policy`` interface
(``OpenVINOPolicy`` below): prompts are our chat template's token ids, its
prefix cache may reuse the key/value blocks of an episode's earlier turns, and a
PEFT adapter is loaded as an OpenVINO GenAI LoRA adapter with PEFT's scaling
(``lora_alpha / r``), fused into the weights when the pipeline is built
(``--fuse``, outside the timing; hf merges inside it) or applied to every request
at run time. With ``--constrain`` each row's ``ActionChoice`` becomes a regular
expression for GenAI's structured output (``choice_regex``). It approximates
``evoflow.policy.constrain``, which differs in that it cuts a long thought off by
its token budget (here: at most ``THOUGHT_CHARS`` characters), accepts the
``Action:`` tag in any case and spacing, follows an action along the tokenizer's
own spelling, and takes a slot's text as Python's printable characters (here:
no control characters, ``]``, ``:`` or line break); replies may differ there.

Prints each backend's wall time, the ratio hf / ov, successes and how many
episodes are identical message for message.

Needs ``openvino-genai`` (``pip install openvino-genai==2026.4.1.0``; it brings
OpenVINO, no torch) and the model exported to an OpenVINO IR folder. The export
(``optimum-cli export openvino -m <model folder> <ir folder>``, optimum-intel)
pins transformers below the project's and pulls torchvision, hence a CUDA
torch: run it in a separate virtual environment.

    python benchmarks/openvino_backend.py --ir IR_FOLDER [--adapter FOLDER]
        [--fuse] [--constrain] [--tasks 8] [--envs maze,babyai]
        [--threads 2] [--precision bf16]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from evoflow.config import load_config
from evoflow.evaluate.run import evaluate_envs
from evoflow.policy.base import (
    ActionChoice,
    Generation,
    Policy,
    PolicyError,
    SamplingParams,
    per_row,
    prompt_ids,
    truncate_reply,
)
from evoflow.policy.hf import HFPolicy, _stop_ids
from evoflow.runtime import rollout_spec

THOUGHT_CHARS = 100  # a constrained thought's length cap (about 25 tokens)
REGEX_SPECIAL = set("\\.^$*+?{}[]|()/")


class OpenVINOPolicy(Policy):
    """OpenVINO GenAI's continuous batching with our chat template's token ids."""

    def __init__(self, ir: str, tokenizer, adapter: str | None, fuse: bool,
                 threads: int, precision: str, max_context: int = 2048) -> None:  # fmt: skip
        import openvino_genai as og

        self.og, self.fuse, self.model_id = og, fuse, f"openvino:{ir}"
        self.tokenizer, self.max_context = tokenizer, max_context
        self.stop_ids = _stop_ids(tokenizer)
        scheduler = og.SchedulerConfig()
        scheduler.enable_prefix_caching = True
        scheduler.cache_size = 2  # GB of KV cache
        properties = {"INFERENCE_NUM_THREADS": threads,
                      "INFERENCE_PRECISION_HINT": precision,
                      "KV_CACHE_PRECISION": precision}  # fmt: skip
        self.adapter = adapter
        self.lora = None if adapter is None else self._adapter_config(adapter)
        if self.lora is not None:
            properties["adapters"] = self.lora
        self.pipe = og.ContinuousBatchingPipeline(ir, scheduler, "CPU", properties)

    def _adapter_config(self, folder: str):
        og = self.og
        settings = json.loads((Path(folder) / "adapter_config.json").read_text())
        mode = (
            og.AdapterConfig.Mode.MODE_FUSE
            if self.fuse
            else og.AdapterConfig.Mode.MODE_DYNAMIC
        )
        config = og.AdapterConfig(mode)
        weights = og.Adapter(str(Path(folder) / "adapter_model.safetensors"))
        config.add(weights, settings["lora_alpha"] / settings["r"])
        return config

    def generate(self, chats, params: SamplingParams, adapter=None, seeds=None,
                 keys=None, choices=None) -> list[Generation]:  # fmt: skip
        import openvino as ov

        if any(a != self.adapter for a in per_row(adapter, len(chats))):
            raise ValueError("this harness serves the one adapter it was built with")
        seeds = seeds or [0] * len(chats)
        choices = choices or [None] * len(chats)
        if len(choices) != len(chats):
            raise ValueError(f"{len(choices)} action choices for {len(chats)} chats")
        prompts = [prompt_ids(self.tokenizer, chat, params.template) for chat in chats]
        results = [Generation("", len(p), 0, "context") for p in prompts]
        room = [i for i, p in enumerate(prompts)
                if len(p) + params.max_new_tokens <= self.max_context]  # fmt: skip
        configs = [self._config(params, seeds[i], choices[i]) for i in room]
        tensors = [ov.Tensor(np.array([prompts[i]], dtype=np.int64)) for i in room]
        try:
            outs = self.pipe.generate(tensors, configs) if room else []
        except RuntimeError as exc:
            raise PolicyError(f"openvino backend failed: {exc}") from exc
        for i, out in zip(room, outs, strict=True):
            if not out.m_generation_ids:
                raise PolicyError("openvino backend: a request came back empty")
            ids = list(out.m_generation_ids[0])
            stopped = bool(ids) and ids[-1] in self.stop_ids
            text, cut = truncate_reply(
                self.tokenizer.decode(ids[:-1] if stopped else ids, skip_special_tokens=True),
                params.max_reply_bytes,
            )  # fmt: skip
            finish = "stop" if stopped and not cut else "length"
            results[i] = Generation(text, len(prompts[i]), len(ids), finish, ids)
        return results

    def _config(self, params: SamplingParams, seed: int, choice: ActionChoice | None):
        og = self.og
        config = og.GenerationConfig()
        config.max_new_tokens = params.max_new_tokens
        config.stop_token_ids = set(self.stop_ids)
        if params.temperature > 0:
            config.do_sample, config.temperature = True, params.temperature
            config.top_p, config.rng_seed = params.top_p, int(seed) % 2**31
        if self.lora is not None and not self.fuse:
            config.adapters = self.lora  # applied at run time, per request
        if choice is not None:
            config.structured_output_config = og.StructuredOutputConfig(
                regex=choice_regex(choice)
            )
        return config


def choice_regex(choice: ActionChoice) -> str:
    """A reply that writes one of ``choice``'s actions, as a regular expression."""

    def escape(text: str) -> str:
        return "".join("\\" + c if c in REGEX_SPECIAL else c for c in text)

    text = r"[^\]\s:][^\]\n\r\t:\x00-\x1f\x7f]{0,199}\]"  # a slot's text, closed
    slots = [escape(s) + text for s in choice.slots]
    action = "(" + "|".join([escape(a) for a in choice.actions] + slots) + ")"
    if choice.form == "text":
        return action
    return rf"Thought: [^\n:]{{0,{THOUGHT_CHARS}}}\nAction: {action}"


def play(policy: Policy, config: dict, envs: dict, adapter: str | None):
    """The test episodes of ``envs`` played by ``policy``, and the wall time."""
    specs = {env: rollout_spec(config, env, method="bench", round=0, client=env,
                               split="test", source="eval", temperature=0.0,
                               adapter=adapter) for env in envs}  # fmt: skip
    start = time.perf_counter()
    results = evaluate_envs(policy, specs, envs, config["generation"]["width"])
    seconds = time.perf_counter() - start
    episodes = sorted((e for pair in results.values() for e in pair[0]),
                      key=lambda e: (e.env, e.task_id))  # fmt: skip
    return episodes, seconds


def capped(env: dict, tasks: int) -> dict:
    """An env's config entry with at most ``tasks`` test tasks (None: all)."""
    return dict(env, test=tasks if env["test"] is None else min(tasks, env["test"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ir", required=True, help="OpenVINO IR folder of the model")
    parser.add_argument("--config", default="config/config.yaml")
    parser.add_argument("--adapter", help="a PEFT LoRA folder (default: none)")
    parser.add_argument("--fuse", action="store_true", help="fuse the adapter")
    parser.add_argument("--constrain", action="store_true")
    parser.add_argument("--tasks", type=int, default=8, help="test tasks per env")
    parser.add_argument("--envs", help="comma-separated (default: all)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--precision", default="bf16", choices=["bf16", "f32"])
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    config = load_config(args.config)
    config["generation"]["constrain_actions"] = args.constrain
    chosen = args.envs.split(",") if args.envs else list(config["envs"])
    envs = {e: capped(config["envs"][e], args.tasks) for e in chosen}
    model = config["model"]
    hf_policy = HFPolicy(model["name"], max_context=model["max_context"],
                         batch_size=model["batch_size"], dtype=model["dtype"])  # fmt: skip
    ov_policy = OpenVINOPolicy(args.ir, hf_policy.tokenizer, args.adapter, args.fuse,
                               args.threads, args.precision, model["max_context"])  # fmt: skip
    played = {name: play(policy, config, envs, args.adapter)
              for name, policy in (("hf", hf_policy), ("ov", ov_policy))}  # fmt: skip
    for name, (episodes, seconds) in played.items():
        turns = sum(e.n_turns for e in episodes)
        wins = sum(e.success for e in episodes)
        print(f"{name}: {len(episodes)} episodes, {turns} turns, {wins} solved, "
              f"{seconds:.1f} s")  # fmt: skip
    (hf_episodes, hf_seconds), (ov_episodes, ov_seconds) = played["hf"], played["ov"]
    same = sum(
        [m.content for m in mine.messages] == [m.content for m in theirs.messages]
        for mine, theirs in zip(hf_episodes, ov_episodes, strict=True)
    )
    print(f"wall time hf / ov: {hf_seconds / ov_seconds:.2f}x; "
          f"identical episodes {same}/{len(hf_episodes)}")  # fmt: skip


if __name__ == "__main__":
    main()
