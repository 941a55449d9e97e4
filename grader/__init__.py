"""The grader: ``grade`` (grader.cli) checks CUDA kernel submissions against a float64 oracle, times
them against the reference solutions and scores them; grader.kernel is what a submission imports."""
