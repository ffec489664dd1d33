"""toolkit.evidence: validation, the journal, the chains, the corpus, the protocol, merge."""
