"""Helpers of the `artifact` domain that are not services: input validation, the git
working-tree scan (checkpoint hygiene) and the arXiv cache."""
