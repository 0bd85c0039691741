"""Learning from stored trajectories: LoRA SFT (and, later, RL)."""

from evoflow.train.sft_config import SFTConfig

__all__ = ["SFTConfig", "train_sft"]


def __getattr__(name: str):
    # torch loads only when training does: the Snakefile imports SFTConfig to
    # build the DAG, and a dry run should not pay for torch.
    if name == "train_sft":
        from evoflow.train.sft_trainer import train_sft

        return train_sft
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
