"""Evidence: schemas, the protocol lock, the journal, the attempt hash chain, predictions
checks, logged actions (Audit) and validation. No torch, no report.
"""
