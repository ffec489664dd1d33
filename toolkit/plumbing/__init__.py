"""Plumbing every layer may use: clock, file hashing, helper processes, peak memory, shipped files.

Stdlib only (no openpyxl, pandas or torch), and nothing from the layers above.
"""
