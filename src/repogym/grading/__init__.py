"""Grading: test logs -> TestReport -> GradeResult with SWE-bench's resolved semantics."""
