"""benchmarks/: the scripts run end to end on tiny sizes."""
