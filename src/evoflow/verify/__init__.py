"""Verifiers of answers: math by symbolic equivalence, code by its tests."""

from evoflow.verify.code import CodeVerdict, check_code, extract_code
from evoflow.verify.maths import MathVerdict, MathVerifier

__all__ = ["CodeVerdict", "MathVerdict", "MathVerifier", "check_code", "extract_code"]
