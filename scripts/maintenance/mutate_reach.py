"""Which tests a mutation run of a module runs, beyond the test files that import it by name
(`mutate.tests_of`): the tests that reach a module through the engine, the model, a facade or the exercises'
registry (`EXTRA_TESTS`); the cost model's own tests and the end-to-end ones a formula module leaves out
(`COSTS_TESTS`, `COSTS_END_TO_END`); and the tests that grade through the sandbox's child, left out of every run
(`GRADING_CHILD_TESTS`). Data alone; `scripts/maintenance/mutate.py` reads it.
"""

from __future__ import annotations

#: Tests that reach a module without importing it by name (through the engine, the model, a facade).
EXTRA_TESTS = {
    "minigpt/runtime/kv_cache.py": ("tests/test_model_cache.py", "tests/test_generate.py", "tests/test_gqa.py"),
    "minigpt/runtime/model.py": ("tests/test_model_cache.py", "tests/test_generate.py", "tests/test_gqa.py",
                                 "tests/test_eviction.py"),  # the attention hook of eviction caches (observe)
    "minigpt/serving/executor.py": ("tests/test_varlen.py", "tests/test_serving.py", "tests/test_paging.py"),
    "minigpt/serving/scheduler.py": ("tests/test_serving.py", "tests/test_paging.py"),
    "minigpt/serving/scheduler_admission.py": ("tests/test_serving.py", "tests/test_paging.py"),
    "minigpt/serving/scheduler_memory.py": ("tests/test_serving.py", "tests/test_paging.py"),
    "minigpt/serving/scheduler_preemption.py": ("tests/test_serving.py", "tests/test_paging.py"),
    "minigpt/exercises/ex18_h2o.py": ("tests/test_seed_independence_ex14_18.py",),  # ex18 Q3's named wrong answers
    # ex18's other generators and checkers, through the registry: ranges, named wrong answers, the solution.
    "minigpt/exercises/ex18.py": ("tests/test_case_generators.py", "tests/test_seed_independence_ex14_18.py",
                                  "tests/test_exercises.py", "tests/test_exercise_mechanisms.py",
                                  "tests/test_exercise_messages.py"),
    # ex18 Q1's decode step with the decoupled RoPE key: named wrong answers, the generator's ranges, the reference
    # solution's mutants, the method's thresholds, the oracle against Hugging Face's DeepseekV3Attention.
    "minigpt/exercises/ex18_latent.py": ("tests/test_seed_independence_ex14_18.py", "tests/test_case_generators.py",
                                         "tests/test_exercises.py", "tests/test_exercise_mechanisms.py",
                                         "tests/test_exercise_messages.py", "tests/test_ex18_latent.py"),
    # ex18 Q2's replay, its slips and generator: the named wrong answers, written apart, the oracle equal to the
    # package's SnapKVCache, the reference solution's mutants and the cut worked by hand.
    "minigpt/exercises/ex18_snapkv.py": ("tests/test_seed_independence_ex14_18.py", "tests/test_exercises.py",
                                         "tests/test_exercise_mechanisms.py", "tests/test_exercise_messages.py",
                                         "tests/test_case_generators.py"),
    # ex11 Q1's pools and Q2's step: named wrong answers, solution mutants, worked cases, the generators' ranges.
    **dict.fromkeys(("minigpt/exercises/ex11_slack.py", "minigpt/exercises/ex11_step.py"),
                    ("tests/test_seed_independence_ex10_13.py", "tests/test_exercises.py",
                     "tests/test_exercise_mechanisms.py", "tests/test_case_generators.py")),
    # ex11 Q3's scheduler (the engine in replay) and Q4's beams over a pool: named wrong answers, written apart,
    # the generators' ranges and edges, the reference solution's mutants, the oracles against the engine and the
    # pool, a case worked by hand.
    "minigpt/exercises/ex11_running.py": ("tests/test_seed_independence_ex10_13.py", "tests/test_exercises.py",
                                          "tests/test_exercise_mechanisms.py", "tests/test_case_generators.py",
                                          "tests/test_ex11_running.py"),
    "minigpt/exercises/ex11_beam.py": ("tests/test_seed_independence_ex10_13.py", "tests/test_exercises.py",
                                       "tests/test_exercise_mechanisms.py", "tests/test_case_generators.py",
                                       "tests/test_ex11_beam.py"),
    **dict.fromkeys(("minigpt/exercises/ex18_window.py", "minigpt/exercises/ex16_goodput.py"),  # ex18 Q4, ex16 Q2:
                    ("tests/test_exercises.py", "tests/test_exercise_mechanisms.py")),  # the reference solution's
    # check() through the registry, and its mutants
    # ex14 Q4's replay and its generator: the named wrong answers, written apart from it, and the edges' placement.
    "minigpt/exercises/ex14_rounds.py": ("tests/test_seed_independence_ex14_18.py", "tests/test_case_generators.py",
                                         "tests/test_exercises.py"),
    # ex14 Q2's generator and the inverse CDF, and ex14's checkers, reached through the registry.
    "minigpt/exercises/ex14_cases.py": ("tests/test_seed_independence_ex14_18.py", "tests/test_case_generators.py",
                                        "tests/test_exercises.py", "tests/test_ex14_cautious.py"),
    "minigpt/exercises/ex14.py": ("tests/test_seed_independence_ex14_18.py", "tests/test_case_generators.py",
                                  "tests/test_exercises.py", "tests/test_exercise_messages.py",
                                  "tests/test_seed_independence_ex14_q3.py", "tests/test_ex14_cautious.py",
                                  "tests/test_ex14_round_law.py", "tests/test_seed_independence_ex14_q1.py",
                                  "tests/test_ex14_ragged.py", "tests/test_exercise_mechanisms.py"),
    # ex14 Q1's ragged round, its slips and generator.
    "minigpt/exercises/ex14_ragged.py": ("tests/test_seed_independence_ex14_q1.py", "tests/test_ex14_ragged.py",
                                         "tests/test_exercises.py", "tests/test_exercise_mechanisms.py"),
    # ex14 Q3's round of a cautious verifier, its slips and generator.
    "minigpt/exercises/ex14_cautious.py": ("tests/test_seed_independence_ex14_q3.py", "tests/test_ex14_cautious.py",
                                           "tests/test_ex14_round_law.py", "tests/test_case_generators.py",
                                           "tests/test_exercises.py", "tests/test_exercise_mechanisms.py"),
    # ex16 Q3's routing walk (and Q2's, which routes through it): named wrong answers, generator, messages.
    "minigpt/exercises/ex16_routing.py": ("tests/test_seed_independence_ex14_18.py", "tests/test_case_generators.py",
                                          "tests/test_exercises.py", "tests/test_exercise_messages.py",
                                          "tests/test_ex16_goodput.py", "tests/test_exercise_mechanisms.py"),
    # ex17 Q3's placement walk and Q4's count, their slips and generators: the named wrong answers, written apart,
    # the generators' ranges, the reference solution's mutants, and what the real sharded model records and holds.
    **dict.fromkeys(("minigpt/exercises/ex17_placements.py", "minigpt/exercises/ex17_shards.py"),
                    ("tests/test_seed_independence_ex14_18.py", "tests/test_case_generators.py",
                     "tests/test_exercises.py", "tests/test_exercise_mechanisms.py", "tests/test_tensor_parallel.py")),
    # Exercise 6's checkers, reached through the registry: the named wrong answers and the edges' placement; Q1's
    # chunk over the cache against SDPA's bottom-right mask, a case worked by hand, the solution's mutants.
    "minigpt/exercises/ex06.py": ("tests/test_seed_independence_ex06_09.py", "tests/test_case_generators.py",
                                  "tests/test_exercises.py", "tests/test_ex06_chunk.py",
                                  "tests/test_exercise_mechanisms.py"),
    # Exercise 6 Q3's decode step from the cache: named wrong answers, the generator's ranges, the reference
    # solution's mutants, the oracle against the model's own prefill and decode, a case worked by hand.
    "minigpt/exercises/ex06_decode.py": ("tests/test_seed_independence_ex06_09.py", "tests/test_case_generators.py",
                                         "tests/test_exercises.py", "tests/test_exercise_mechanisms.py",
                                         "tests/test_ex06_decode.py"),
    # Exercise 6 Q4's generation from the weights: named wrong answers, the generator's ranges and edges, the
    # reference solution's mutants, the method's bound, the oracle against the model's own generation.
    "minigpt/exercises/ex06_generate.py": ("tests/test_seed_independence_ex06_09.py", "tests/test_case_generators.py",
                                           "tests/test_exercises.py", "tests/test_exercise_mechanisms.py",
                                           "tests/test_exercise_messages.py", "tests/test_ex06_generate.py"),
}
#: A module of the cost model (pure functions every layer imports through `minigpt.costs`) keeps,
#: of the files that import the facade (~36, 3 min for one clean run on one core, and a module run
#: makes two), those that name one of its public names or the module, plus `COSTS_TESTS` (they loop
#: over every formula; test_costs_checks also tests `_check`, whose names are private), less
#: `COSTS_END_TO_END`: the grader, the explorer pages, the engine and the processes, whose few
#: formula checks the formula tests make again, in seconds.
COSTS_TESTS = ("tests/test_costs.py", "tests/test_costs_js.py", "tests/test_costs_checks.py")
COSTS_END_TO_END = ("tests/test_grading.py", "tests/test_explorers.py", "tests/test_serving.py",
                    "tests/test_paging.py", "tests/test_disagg.py", "tests/test_tensor_parallel.py",
                    "tests/test_site.py", "tests/test_minigpt_live_site.py",
                    "tests/test_minigpt_js.py", "tests/test_layers.py")
#: Tests that grade through the sandbox's child process: the child runs a staged copy of the package,
#: which in a mutation run is mutmut's rewritten copy, and it cannot import mutmut (the sandbox offers
#: torch, numpy and safetensors only), so every run would fail. Left out of every module's tests; the
#: exercises' mechanisms are reached in-process by check() (tests/test_exercises.py, the seed tests).
GRADING_CHILD_TESTS = ("tests/test_grading.py", "tests/test_grading_answers.py", "tests/test_grading_limits.py",
                       "tests/test_grading_teardown.py", "tests/test_feedback_es.py")
