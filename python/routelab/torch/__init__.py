"""routelab's attention schemes as PyTorch modules (pure Python: needs only torch and numpy).

  from routelab.torch import AccumulatedRotaryAttention, from_safetensors, mixing_windows
  attn = AccumulatedRotaryAttention(d_model=128, heads=4, angles="learned")   # (B, T, d_model) -> same
  model = from_safetensors("run.safetensors")        # a `routelab export` file as a full model
  cache = model.new_cache(); model(tokens[:, :1], cache); model(tokens[:, 1:2], cache)  # decoding

docs/python.md has the walk-through; attention.py the shapes and the cache.
"""
from .attention import (EVAL_PASS, SCHEMES, AccumulatedRotaryAttention, ALiBiAttention, AttentionCache,
                        HouseholderAttention, RotaryAttention, SchemeAttention, accumulated_rotary_attention,
                        alibi_slopes, attention_for_scheme, householder_step, rope_frequencies, rotate, wrap)
from .mixing import byte_frequencies, mixing_window, mixing_windows
from .model import (TOL_BPB, TOL_LOSS, RoutelabModel, bits_per_byte, compare, evaluate, from_safetensors,
                    load_safetensors, read_eval_bpb, read_losses)
from . import philox

__all__ = ["EVAL_PASS", "SCHEMES", "AccumulatedRotaryAttention", "ALiBiAttention", "AttentionCache",
           "HouseholderAttention", "RotaryAttention", "SchemeAttention", "accumulated_rotary_attention",
           "alibi_slopes", "attention_for_scheme", "householder_step", "rope_frequencies", "rotate", "wrap",
           "byte_frequencies", "mixing_window", "mixing_windows", "TOL_BPB", "TOL_LOSS", "RoutelabModel",
           "bits_per_byte", "compare", "evaluate", "from_safetensors", "load_safetensors", "read_eval_bpb",
           "read_losses", "philox"]
