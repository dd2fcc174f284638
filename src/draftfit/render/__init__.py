"""Renderers: pure functions from a result object to the text written on stdout."""
