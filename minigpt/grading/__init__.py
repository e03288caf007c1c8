"""The instructor's grader for the exercise notebooks: ``python -m minigpt.grading --exercise ex01 ...``.

Security design: student code never runs in the grader's process. The trusted parent
(`minigpt.grading.grader`) draws random inputs and computes the expected outputs with the package;
a child process (`minigpt.grading.child`) runs the notebook's cells under an audit hook and a time
limit and returns only the outputs, which the parent compares.
"""

from minigpt.grading.grader import SubmissionResult, TestResult, grade_folder, grade_notebook, prepare

__all__ = ["SubmissionResult", "TestResult", "grade_folder", "grade_notebook", "prepare"]
