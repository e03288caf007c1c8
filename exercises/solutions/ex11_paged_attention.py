"""Reference solutions for exercises/ex11_paged_attention.ipynb (instructors only; not in the package or the book).

Each `# %% solution:qN` block replaces the notebook cell tagged `solution:qN`.
"""


# %% solution:q1
def pool_slack(tables, lengths, block_size):
    """Slots reserved but empty, block by block: a shared block counts once."""
    filled = {}
    for table, S in zip(tables, lengths, strict=True):
        for i, block in enumerate(table):
            filled[block] = min(block_size, S - i * block_size)
    return len(filled) * block_size - sum(filled.values())


# %% solution:q2
def slot_mapping(tables, lengths, counts, block_size):
    """Where each new token of a fused step goes: block id × b + row, sequences end to end."""
    slots = []
    for table, S, T in zip(tables, lengths, counts, strict=True):
        for p in range(S, S + T):
            slots.append(table[p // block_size] * block_size + p % block_size)
    return slots


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


# %% solution:q5
def grow_block_tables(ops, num_blocks, block_size):
    """Block tables grown on demand over a free list (a stack); the state after each op."""
    free = list(range(num_blocks - 1, -1, -1))  # pop() hands out block 0 first
    tables, lengths, states = [], [], []
    for op in ops:
        if op[0] == "add":
            tables.append([])
            lengths.append(0)
            k = len(tables) - 1
        elif op[0] == "free":
            k = op[1]
            free.extend(tables[k])  # first to last: the last block ends on top
            tables[k] = []
            states.append([[], len(free)])
            continue
        else:  # ["append", k, T]
            k, T = op[1], op[2]
            new = -(-(lengths[k] + T) // block_size) - len(tables[k])
            if new <= len(free):  # all or nothing
                tables[k] += [free.pop() for _ in range(new)]
                lengths[k] += T
        states.append([list(tables[k]), len(free)])
    return states


# %% solution:q6
def fork_and_write(ops, num_blocks, block_size):
    """Forks share blocks by reference count; a write into a shared, partly filled last block copies it."""
    b = block_size
    free = list(range(num_blocks - 1, -1, -1))
    refs = [0] * num_blocks
    pool = [[None] * b for _ in range(num_blocks)]
    tables, lengths, states = [], [], []

    def release(block):
        refs[block] -= 1
        if refs[block] == 0:
            free.append(block)

    def take():
        block = free.pop()
        refs[block] = 1
        return block

    for op in ops:
        if op[0] == "add":
            tables.append([])
            lengths.append(0)
            k = len(tables) - 1
        elif op[0] == "fork":
            tables.append(list(tables[op[1]]))
            lengths.append(lengths[op[1]])
            for block in tables[-1]:
                refs[block] += 1
            k = len(tables) - 1
        elif op[0] == "free":
            for block in tables[op[1]]:
                release(block)
            tables[op[1]], lengths[op[1]] = [], 0
            states.append([[], [], len(free)])
            continue
        else:  # ["append", k, tokens]
            k, tokens = op[1], op[2]
            table, S = tables[k], lengths[k]
            shared_tail = S % b != 0 and refs[table[-1]] > 1
            new = -(-(S + len(tokens)) // b) - len(table) + shared_tail
            if new <= len(free):  # all or nothing
                if shared_tail:  # copy-on-write
                    old, copy = table[-1], take()
                    pool[copy] = list(pool[old])
                    release(old)
                    table[-1] = copy
                while len(table) * b < S + len(tokens):
                    table.append(take())
                for i, token in enumerate(tokens):
                    pool[table[(S + i) // b]][(S + i) % b] = token
                lengths[k] = S + len(tokens)
        table = tables[k]
        read = [pool[table[p // b]][p % b] for p in range(lengths[k])]
        states.append([list(table), read, len(free)])
    return states
