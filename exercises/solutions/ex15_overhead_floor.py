"""Reference solutions for exercises/ex15_overhead_floor.ipynb (instructors only; not in the package or the book).

Each `# %% solution:qN` block replaces the notebook cell tagged `solution:qN`.
"""

import torch


# %% solution:q1
def count_decode_ops(model, S):
    """Every aten operator one decode step dispatches, counted by a dispatch mode around decode_step alone."""
    from torch.utils._python_dispatch import TorchDispatchMode

    from minigpt.runtime.generate import decode_step, prefill

    class Counter(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.n += 1
            return func(*args, **(kwargs or {}))

    cache = model.new_cache(1, S_max=S + 1)
    prefill(model, torch.zeros(1, S, dtype=torch.long), cache)
    token = torch.zeros(1, 1, dtype=torch.long)
    with Counter() as counter:
        decode_step(model, token, cache)
    return counter.n


# %% solution:q2
def classify_ops(names):
    """"view" when the schema says the output aliases an input (or _unsafe_view), "sync" for the host read."""
    kinds = []
    for name in names:
        if name == "aten._local_scalar_dense":
            kinds.append("sync")
            continue
        packet = getattr(torch.ops.aten, name.split(".")[1])
        overloads = packet.overloads()
        op = getattr(packet, "default" if "default" in overloads else overloads[0])
        returns = op._schema.returns
        aliases = bool(returns) and all(r.alias_info is not None and not r.alias_info.is_write for r in returns)
        kinds.append("view" if op.is_view or aliases or name == "aten._unsafe_view" else "kernel")
    return kinds


# %% solution:q3
def binding_term(model, hardware, S, B, n_ops, t_op):
    """Eq. (18.1)'s larger term: the floor n_ops·t_op against Eq. (7.2)'s traffic time, bf16."""
    s, d = 2, model.d
    kv_width = model.H_kv * model.d_h
    per_token = 2 * d * (d + 2 * kv_width) + 2 * d * d + 2 * model.ffn_matrices * d * model.d_ffn
    flops = B * (model.L * (per_token + 4 * (S + 1) * d) + 2 * d * model.V)
    moved = model.N_params * s + B * S * 2 * model.L * kv_width * s
    traffic = max(moved / hardware.bandwidth, flops / hardware.peak_flops)
    return "overhead" if n_ops * t_op >= traffic else "traffic"


# %% solution:q4
def static_mask(S_max, input_pos):
    """Row j is visible to the query at position p when j <= p: [1, T, S_max], by broadcasting."""
    rows = torch.arange(S_max, device=input_pos.device)
    return rows.view(1, 1, -1) <= input_pos.view(1, -1, 1)
