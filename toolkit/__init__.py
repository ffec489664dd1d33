"""IteraGPU Lab: which rented GPU gives the same ML result for the least money.

The package keeps torch out of everything but ``toolkit.runner``: reading,
validating and reporting a workbook never imports it.
"""

__version__ = "0.1.0"
