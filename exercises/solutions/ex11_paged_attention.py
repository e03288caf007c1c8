"""Reference solutions for exercises/ex11_paged_attention.ipynb (instructors only; not in the package or the book).

Each `# %% solution:qN` block replaces the notebook cell tagged `solution:qN`.
"""


# %% solution:q1
def paged_slack(S, block_size):
    """Eq. (11.1): slots reserved but empty in the last block."""
    return -(-S // block_size) * block_size - S


# %% solution:q2
def physical_slot(table, p, block_size):
    """Where token p lives: [block, row]."""
    return [table[p // block_size], p % block_size]


# %% solution:q3
def utilisation(requests, policy, S_max, block_size):
    """Eq. (11.2): tokens held over slots reserved, summed over every decode step."""
    held = reserved = 0
    for P, D in requests:
        for S_t in range(P, P + D):
            held += S_t
            if policy == "max":
                reserved += S_max
            elif policy == "exact":
                reserved += P + D
            else:
                reserved += -(-S_t // block_size) * block_size
    return held / reserved


# %% solution:q4
def fork_saved_blocks(P, n, block_size):
    """Eq. (11.3): the n − 1 extra samples share the prompt's full blocks."""
    return (n - 1) * (P // block_size)
