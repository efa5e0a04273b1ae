"""The continuum command line."""
