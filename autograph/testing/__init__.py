"""Random program generators and checkers used by the tests and `autograph fuzz`."""
