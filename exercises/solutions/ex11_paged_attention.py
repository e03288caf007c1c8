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
def running_per_step(requests, num_blocks, block_size, reservation):
    """Requests that run in each step of a continuous-batching scheduler, until all have finished."""
    b = block_size
    paged = reservation == "paged"
    generated = [0] * len(requests)  # tokens each request has generated
    held = [0] * len(requests)  # blocks each request holds
    waiting = list(range(len(requests)))  # the queue, head first
    running = []  # in admission order: the last one is preempted first
    free = num_blocks
    counts = []
    while waiting or running:
        ran = []
        for r in list(running):  # decodes, the oldest first
            if r not in running:
                continue  # preempted earlier in this step
            P, D = requests[r]
            # it holds P + g - 1 tokens; its decode writes token P + g - 1
            need = -(-(P + generated[r]) // b) - held[r] if paged else 0
            while need > free and r in running:
                victim = running.pop()  # the youngest, maybe r itself
                free += held[victim]
                held[victim] = 0
                waiting.insert(0, victim)  # recomputed first, its tokens kept
            if r in running:
                free -= need
                held[r] += need
                ran.append(r)
        for r in list(waiting):  # admissions, first come, first served
            P, D = requests[r]
            tokens = P + generated[r] if paged else P + D - 1
            need = -(-tokens // b)
            if need > free:
                break  # nobody overtakes the head of the queue
            waiting.remove(r)
            running.append(r)
            free -= need
            held[r] = need
            ran.append(r)
        counts.append(len(ran))
        for r in ran:  # each request that ran has a new token
            generated[r] += 1
            if generated[r] == requests[r][1]:  # finished: its blocks go
                running.remove(r)
                free += held[r]
                held[r] = 0
    return counts


# %% solution:q4
def beam_blocks(P, parents, block_size):
    """Blocks in use after the prompt and after each step of a beam search over shared blocks."""
    b = block_size
    owners = []  # owners[block]: how many block tables name it

    def take():
        owners.append(1)
        return len(owners) - 1

    def in_use():
        return sum(1 for r in owners if r > 0)

    beams = [([take() for _ in range(-(-P // b))], P)]  # (block table, tokens)
    counts = [in_use()]
    for step in parents:
        new = [(list(beams[p][0]), beams[p][1]) for p in step]  # forks
        for table, _ in new:
            for block in table:
                owners[block] += 1
        for table, _ in beams:  # the old beams are freed
            for block in table:
                owners[block] -= 1
        for j, (table, S) in enumerate(new):  # each new beam writes a token
            if S % b == 0:
                table.append(take())
            elif owners[table[-1]] > 1:  # copy-on-write of a shared block
                owners[table[-1]] -= 1
                table[-1] = take()
            new[j] = (table, S + 1)
        beams = new
        counts.append(in_use())
    return counts


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
