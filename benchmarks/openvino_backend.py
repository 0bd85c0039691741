"""OpenVINO GenAI against the hf backend on the embedded evaluation's episodes.

Both play the same greedy test episodes of ``config/config.yaml`` (its strata,
turn caps and width; ``--tasks`` per env, ``--envs`` to pick some) through the
rollout engine, so every turn's chats, adapters and action choices reach each
backend alike. ``hf`` is ``HFPolicy`` (bf16 where the CPU has bf16 units, a
batch-wide adapter merged into the weights). ``ov`` is OpenVINO GenAI's
continuous-batching pipeline behind the same ``Policy`` interface
(``OpenVINOPolicy`` below): prompts are our chat template's token ids, prefix
caching keeps each episode's history between turns, and a PEFT adapter is
loaded as an OpenVINO GenAI LoRA adapter with PEFT's scaling (``lora_alpha / r``),
fused into the weights (``--fuse``) or applied at run time. With
``--constrain`` each row's ``ActionChoice`` becomes a regular expression for
GenAI's structured output (a ``Thought:`` line of at most ``THOUGHT_CHARS``
characters, then one listed action or a slot's opening with its text): the same
language as ``evoflow.policy.constrain`` but not its token-level rules (the cut
of a long thought, the tokenizer's own spelling), so replies may differ there.

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
        self.adapter, self.lora = adapter, None
        if adapter is not None:
            self.lora = properties["adapters"] = self._adapters(adapter)
        self.pipe = og.ContinuousBatchingPipeline(ir, scheduler, "CPU", properties)

    def _adapters(self, folder: str):
        og = self.og
        settings = json.loads((Path(folder) / "adapter_config.json").read_text())
        mode = (
            og.AdapterConfig.Mode.MODE_FUSE
            if self.fuse
            else og.AdapterConfig.Mode.MODE_AUTO
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
        prompts = [prompt_ids(self.tokenizer, chat, params.template) for chat in chats]
        results = [Generation("", len(p), 0, "context") for p in prompts]
        room = [i for i, p in enumerate(prompts)
                if len(p) + params.max_new_tokens <= self.max_context]  # fmt: skip
        configs = [self._config(params, (seeds or [0] * len(chats))[i],
                                choices[i] if choices else None) for i in room]  # fmt: skip
        tensors = [ov.Tensor(np.array([prompts[i]], dtype=np.int64)) for i in room]
        for i, out in zip(room, self.pipe.generate(tensors, configs) if room else [],
                          strict=True):  # fmt: skip
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

    slots = [escape(s) + r"[^\]\n:]{1,200}\]" for s in choice.slots]
    action = "(" + "|".join([escape(a) for a in choice.actions] + slots) + ")"
    if choice.form == "text":
        return action
    return rf"Thought: [^\n]{{0,{THOUGHT_CHARS}}}\nAction: {action}"


def play(policy: Policy, config: dict, envs: dict, adapter: str | None):
    specs = {env: rollout_spec(config, env, method="bench", round=0, client=env,
                               split="test", source="eval", temperature=0.0,
                               adapter=adapter) for env in envs}  # fmt: skip
    start = time.perf_counter()
    results = evaluate_envs(policy, specs, envs, config["generation"]["width"])
    seconds = time.perf_counter() - start
    episodes = sorted((e for pair in results.values() for e in pair[0]),
                      key=lambda e: (e.env, e.task_id))  # fmt: skip
    return episodes, seconds


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
    envs = {e: dict(config["envs"][e], test=min(args.tasks, config["envs"][e]["test"]))
            for e in chosen}  # fmt: skip
    model = config["model"]
    hf = HFPolicy(model["name"], max_context=model["max_context"], dtype=model["dtype"])
    ov = OpenVINOPolicy(args.ir, hf.tokenizer, args.adapter, args.fuse,
                        args.threads, args.precision, model["max_context"])  # fmt: skip
    played = {name: play(policy, config, envs, args.adapter)
              for name, policy in (("hf", hf), ("ov", ov))}  # fmt: skip
    for name, (episodes, seconds) in played.items():
        turns = sum(e.n_turns for e in episodes)
        wins = sum(e.success for e in episodes)
        print(f"{name}: {len(episodes)} episodes, {turns} turns, {wins} solved, "
              f"{seconds:.1f} s")  # fmt: skip
    (a, a_s), (b, b_s) = played["hf"], played["ov"]
    same = sum([m.content for m in x.messages] == [m.content for m in y.messages]
               for x, y in zip(a, b, strict=True))  # fmt: skip
    print(f"wall time hf / ov: {a_s / b_s:.2f}x; identical episodes {same}/{len(a)}")


if __name__ == "__main__":
    main()
