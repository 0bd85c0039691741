"""Verifiers of answers: math by symbolic equivalence, code by its tests."""

from evoflow.verify.cases import UnsplittableTest
from evoflow.verify.code import CodeVerdict, check_code, code_helpers, extract_code
from evoflow.verify.maths import MathVerdict, MathVerifier

__all__ = [
    "CodeVerdict",
    "MathVerdict",
    "MathVerifier",
    "UnsplittableTest",
    "check_code",
    "code_helpers",
    "extract_code",
]
