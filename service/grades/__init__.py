"""Grades as a course sees them: the course's policy, exports to Gradescope and PrairieLearn, the gradebook."""
