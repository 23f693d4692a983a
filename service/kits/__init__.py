"""Kits that plug kernelgrade into course platforms: the Gradescope autograder zip and the
PrairieLearn external grader (service/kits/build.py writes them; kernelgrade_kit.py runs inside)."""
