"""MiniGPT's GGUF file run by llama.cpp (through `llama-cpp-python`'s ctypes binding): logits, greedy
continuations, and llama.cpp's own meters.

llama.cpp times every `llama_decode` call and keeps two sums (`llama_perf_context`): a call with more
than one token counts as *prompt eval* (prefill), a call with one token as *eval* (one decode step).
Its per-request log prints them as `prompt eval time = … ms / N tokens (… ms per token, … tokens per
second)` and `eval time = … ms / N runs`; `request_meters` reads the same numbers for one request.

Settings that change the arithmetic, all explicit here: `kv_type` (llama.cpp's default KV cache is f16:
K and V rounded to fp16 when written; "f32" keeps them exact), `flash_attn` (llama.cpp's CPU flash
attention accumulates softmax·V in f16 when V is f16: `ggml-cpu/ops.cpp`), `n_threads` (llama.cpp's
thread pool; 1 to compare with the book's one-thread CPU data). `llama_cpp` is imported on first use:
`import minigpt` never needs it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: ggml type ids (`enum ggml_type`): the KV cache types a context may use.
KV_TYPES = {"f32": 0, "f16": 1}


#: CPU features the project's wheel (wheels/) was built for: GGML_NATIVE=OFF with AVX, AVX2, FMA, F16C,
#: BMI2 (x86-64-v3). On a CPU without them its ggml would stop at the first such instruction (SIGILL).
WHEEL_CPU_FLAGS = ("avx", "avx2", "fma", "f16c", "bmi2")


def unavailable() -> str | None:
    """Why llama.cpp cannot run here (no llama_cpp, its library fails to load, a CPU without the wheel's
    instructions), or None. Checked before importing, so a missing instruction is a message, not a crash."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        flags = set()
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
        missing = [f for f in WHEEL_CPU_FLAGS if flags and f not in flags]
        if missing:
            return f"this CPU lacks {missing}, which the llama.cpp wheel in wheels/ needs"
    try:
        import llama_cpp  # noqa: F401
    except Exception as e:  # ImportError, or the shared library failing to load (OSError)
        return f"{type(e).__name__}: {e}"
    return None


def _llama_cpp():
    try:
        import llama_cpp
    except ImportError as e:
        raise ImportError("running a GGUF file needs llama-cpp-python: `make install` installs the wheel in "
                          "wheels/ (README, 'llama.cpp'), or pip install llama-cpp-python==0.3.36") from e
    return llama_cpp


def open_gguf(path: Path | str, *, n_ctx: int | None = None, n_threads: int = 1, kv_type: str = "f16",
              flash_attn: bool = False, logits_all: bool = True, verbose: bool = False):
    """A `llama_cpp.Llama` on a GGUF file: context of `n_ctx` tokens (default: the file's context length),
    one batch of up to n_ctx tokens, `n_threads` for prefill and decode alike."""
    if kv_type not in KV_TYPES:
        raise ValueError(f"kv_type must be one of {sorted(KV_TYPES)}, got {kv_type!r}")
    if not isinstance(n_threads, int) or isinstance(n_threads, bool) or n_threads < 1:
        raise ValueError(f"n_threads must be an integer >= 1, got {n_threads!r}")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist")
    if n_ctx is None:
        from minigpt.interop.gguf_read import read_gguf

        n_ctx = read_gguf(path).config.S_max
    llama_cpp = _llama_cpp()
    return llama_cpp.Llama(
        model_path=str(path), n_ctx=n_ctx, n_batch=n_ctx, n_ubatch=n_ctx, n_threads=n_threads,
        n_threads_batch=n_threads, type_k=KV_TYPES[kv_type], type_v=KV_TYPES[kv_type], flash_attn=flash_attn,
        logits_all=logits_all, n_gpu_layers=0, seed=0, verbose=verbose,
    )


def context(llm) -> int:
    """Positions a sequence may use: the file's context length (MiniGPT's S_max, its position table), which
    llama.cpp's own context (padded up, to 256 for S_max = 128) may exceed."""
    return min(llm.n_ctx(), llm._model.n_ctx_train())  # noqa: SLF001


def _check_ids(llm, ids) -> list[int]:
    ids = [int(i) for i in ids]
    V = llm.n_vocab()
    if not ids or min(ids) < 0 or max(ids) >= V:
        raise ValueError(f"ids must be a non-empty list of token ids in 0..{V - 1}, got {ids[:8]}")
    if len(ids) > context(llm):
        raise ValueError(f"{len(ids)} ids exceed the model's context of {context(llm)} positions")
    return ids


def logits(llm, ids) -> np.ndarray:
    """llama.cpp's logits `[T, V]` (f32) for one sequence of token ids, in one batch from position 0 (the
    context needs `logits_all=True`, `open_gguf`'s default)."""
    ids = _check_ids(llm, ids)
    if not llm._logits_all:  # noqa: SLF001 - the binding keeps all logits only when asked at creation
        raise ValueError("open the model with logits_all=True to read every position's logits")
    llm.reset()
    llm.eval(ids)
    return np.array(llm.scores[: len(ids)], dtype=np.float32)


def greedy(llm, ids, D: int) -> list[int]:
    """D greedy tokens after the prompt `ids`: one prefill call, then D-1 one-token calls (llama.cpp's KV
    cache), each next token the argmax of the last logits (the first maximum, as torch.argmax)."""
    ids = _check_ids(llm, ids)
    if not isinstance(D, int) or D < 1 or len(ids) + D > context(llm) + 1:
        raise ValueError(f"D must be an integer in 1..{context(llm) + 1 - len(ids)}, got {D!r}")
    llama_cpp = _llama_cpp()
    V = llm.n_vocab()
    llm.reset()
    out: list[int] = []
    llm.eval(ids)
    for step in range(D):
        row = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(V,))
        out.append(int(np.argmax(row)))
        if step < D - 1:
            llm.eval(out[-1:])
    return out


@dataclass(frozen=True)
class RequestMeters:
    """One request's meters as llama.cpp keeps them (`llama_perf_context`): prompt eval (calls of more
    than one token) and eval (one-token calls), in milliseconds, and each step's share of the eval meter
    (`step_eval_ms`, step k at S = P + k cached tokens); and the wall time of each call seen from Python
    (`wall_prefill_s`, `wall_steps_s`), which adds the binding's own cost per call."""

    P: int
    D: int
    prompt_eval_ms: float
    n_prompt: int
    eval_ms: float
    n_eval: int
    wall_prefill_s: float
    wall_steps_s: tuple[float, ...]
    step_eval_ms: tuple[float, ...] = ()

    @property
    def ms_per_prompt_token(self) -> float:
        return self.prompt_eval_ms / self.n_prompt

    @property
    def ms_per_step(self) -> float:
        return self.eval_ms / self.n_eval

    def log_lines(self) -> list[str]:
        """The two lines llama.cpp's `llama_perf_context_print` writes for these numbers."""
        p, e = self.prompt_eval_ms, self.eval_ms
        return [f"prompt eval time = {p:10.2f} ms / {self.n_prompt:5d} tokens ({p / self.n_prompt:8.2f} ms per "
                f"token, {1e3 * self.n_prompt / p:8.2f} tokens per second)",
                f"       eval time = {e:10.2f} ms / {self.n_eval:5d} runs   ({e / self.n_eval:8.2f} ms per token, "
                f"{1e3 * self.n_eval / e:8.2f} tokens per second)"]

    def to_record(self) -> dict[str, Any]:
        return {"P": self.P, "D": self.D, "prompt_eval_ms": self.prompt_eval_ms, "n_prompt": self.n_prompt,
                "eval_ms": self.eval_ms, "n_eval": self.n_eval, "wall_prefill_s": self.wall_prefill_s,
                "wall_steps_s": list(self.wall_steps_s), "step_eval_ms": list(self.step_eval_ms)}


def request_meters(llm, ids, D: int) -> RequestMeters:
    """Run one request (prefill of len(ids) ≥ 2 tokens, then D decode steps of one token each, greedy) and
    read llama.cpp's meters for it, reset before it starts."""
    ids = _check_ids(llm, ids)
    if len(ids) < 2:
        raise ValueError("a prompt of at least 2 tokens: llama.cpp counts a one-token call as eval, not prompt")
    if not isinstance(D, int) or D < 1 or len(ids) + D > context(llm):
        raise ValueError(f"D must be an integer in 1..{context(llm) - len(ids)}, got {D!r}")
    llama_cpp = _llama_cpp()
    V = llm.n_vocab()
    llm.reset()
    llama_cpp.llama_perf_context_reset(llm.ctx)
    t0 = time.perf_counter()
    llm.eval(ids)
    llama_cpp.llama_synchronize(llm.ctx)  # llama.cpp adds a call's time to its meter here
    wall_prefill = time.perf_counter() - t0
    steps, meter, before = [], [], 0.0
    for _ in range(D):
        row = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(V,))
        token = int(np.argmax(row))
        t0 = time.perf_counter()
        llm.eval([token])
        llama_cpp.llama_synchronize(llm.ctx)
        steps.append(time.perf_counter() - t0)
        total = llama_cpp.llama_perf_context(llm.ctx).t_eval_ms
        meter.append(total - before)
        before = total
    perf = llama_cpp.llama_perf_context(llm.ctx)
    return RequestMeters(P=len(ids), D=D, prompt_eval_ms=perf.t_p_eval_ms, n_prompt=perf.n_p_eval,
                         eval_ms=perf.t_eval_ms, n_eval=perf.n_eval, wall_prefill_s=wall_prefill,
                         wall_steps_s=tuple(steps), step_eval_ms=tuple(meter))


def llama_cpp_version() -> dict[str, str]:
    """The binding's version and the CPU features its ggml was built with (`llama_print_system_info`)."""
    llama_cpp = _llama_cpp()
    info = llama_cpp.llama_print_system_info()
    return {"llama_cpp_python": llama_cpp.__version__,
            "system_info": info.decode() if isinstance(info, bytes) else str(info),
            "threads_env": os.environ.get("OMP_NUM_THREADS", "")}
