"""A plugin's whole property-test file: round trips of drawn values in both modes (through its codec too),
truncations, and mutation fuzzing of its sample."""

from toy_plugin import SAMPLE, fmt

from wvformats.testing import property_tests

globals().update(property_tests(fmt(), samples=[SAMPLE]))
