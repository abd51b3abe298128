"""routelab's attention schemes as PyTorch modules and functions (pure Python: needs only torch and numpy).

  from routelab.torch import AccumulatedRotaryAttention, from_safetensors, mixing_windows
  attn = AccumulatedRotaryAttention(d_model=128, heads=4, angles="learned")   # (B, T, d_model) -> same
  o = accumulated_rotary_attention(q, k, v, theta)     # inside your own attention, (B, T, H, hd)
  o = householder_attention(q, k, v, w, beta)          # PaTH's transport, blocked
  model = from_safetensors("run.safetensors")        # a `routelab export` file as a full model
  cache = model.new_cache(); model(tokens[:, :1], cache); model(tokens[:, 1:2], cache)  # decoding
  errors = task_errors(model, s)                       # s from routelab.task_sets: the CLI's errors

docs/python.md has the walk-through; attention.py the modules, rotary.py and householder.py the functions.
"""
from . import philox
from .attention import (ANGLES, EVAL_PASS, SCHEMES, STEPS, AccumulatedRotaryAttention, ALiBiAttention,
                        AttentionCache, HouseholderAttention, HouseholderSteps, LearnedAngles, PathSteps,
                        ProjectedAngles, RandomAngles, RopeAngles, RotaryAttention, Scheme, SchemeAttention,
                        attention_for_scheme)
from .householder import householder_attention, householder_attention_reference, householder_step
from .mixing import attention_modules, byte_frequencies, mixing_window, mixing_windows, token_frequencies
from .model import (TOL_BPB, TOL_LOSS, RoutelabModel, bits_per_byte, compare, evaluate, from_safetensors,
                    load_safetensors, read_eval_bpb, read_losses)
from .tasks import task_errors, task_passes, task_read_bits, task_read_logits
from .rotary import (accumulate, accumulated_rotary_attention, alibi_slopes, attend, cos_sin, rope_frequencies,
                     rotate, wrap)

__all__ = ["ANGLES", "EVAL_PASS", "SCHEMES", "STEPS", "AccumulatedRotaryAttention", "ALiBiAttention",
           "AttentionCache", "HouseholderAttention", "HouseholderSteps", "LearnedAngles", "PathSteps",
           "ProjectedAngles", "RandomAngles", "RopeAngles", "RotaryAttention", "Scheme", "SchemeAttention",
           "attention_for_scheme", "householder_attention", "householder_attention_reference", "householder_step",
           "attention_modules",
           "byte_frequencies", "mixing_window", "mixing_windows", "token_frequencies", "TOL_BPB", "TOL_LOSS",
           "RoutelabModel", "bits_per_byte", "compare", "evaluate", "from_safetensors", "load_safetensors",
           "read_eval_bpb", "read_losses", "accumulate", "accumulated_rotary_attention", "alibi_slopes", "attend",
           "cos_sin", "rope_frequencies", "rotate", "wrap", "philox", "task_errors", "task_passes",
           "task_read_bits", "task_read_logits"]
