"""Learning from stored trajectories: LoRA SFT (and, later, RL)."""

from evoflow.train.sft_config import SFTConfig
from evoflow.train.sft_trainer import train_sft

__all__ = ["SFTConfig", "train_sft"]
